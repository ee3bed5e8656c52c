// Nelder–Mead with standard coefficients (reflection 1, expansion 2, contraction 0.5, shrink
// 0.5) over logistic-transformed coordinates (nelder_mead.h).
#include "engine/perf/nelder_mead.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace prima::perf {
namespace {

// u in R <-> x in (lo, hi).
double to_x(double u, const FitBounds& b) { return b.lo + (b.hi - b.lo) / (1 + std::exp(-u)); }
double to_u(double x, const FitBounds& b) {
  const double eps = 1e-9 * (b.hi - b.lo);
  const double s = (std::clamp(x, b.lo + eps, b.hi - eps) - b.lo) / (b.hi - b.lo);
  return std::log(s / (1 - s));
}

}  // namespace

FitResult nelder_mead(const std::function<double(const std::vector<double>&)>& f,
                      std::vector<double> x0, const std::vector<FitBounds>& bounds,
                      int max_iterations, double tol,
                      const std::function<void(int, double)>& progress) {
  const std::size_t n = x0.size();
  FitResult res;
  auto eval = [&](const std::vector<double>& u) {
    std::vector<double> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = to_x(u[i], bounds[i]);
    ++res.evaluations;
    const double v = f(x);
    return std::isfinite(v) ? v : 1e300;
  };
  std::vector<std::vector<double>> s(n + 1, std::vector<double>(n));
  for (std::size_t i = 0; i < n; ++i) s[0][i] = to_u(x0[i], bounds[i]);
  for (std::size_t k = 1; k <= n; ++k) {
    s[k] = s[0];
    s[k][k - 1] += 1.0;  // a unit step in logistic space: a sizeable move of any parameter
  }
  std::vector<double> v(n + 1);
  for (std::size_t k = 0; k <= n; ++k) v[k] = eval(s[k]);
  std::vector<std::size_t> order(n + 1);
  for (res.iterations = 0; res.iterations < max_iterations; ++res.iterations) {
    std::iota(order.begin(), order.end(), 0);
    std::sort(order.begin(), order.end(), [&](auto a, auto b) { return v[a] < v[b]; });
    const std::size_t best = order[0], worst = order[n], second = order[n - 1];
    if (progress) progress(res.iterations, v[best]);
    if (std::fabs(v[worst] - v[best]) < tol) break;
    std::vector<double> c(n, 0.0);
    for (std::size_t k = 0; k <= n; ++k)
      if (k != worst)
        for (std::size_t i = 0; i < n; ++i) c[i] += s[k][i] / n;
    auto along = [&](double t) {
      std::vector<double> p(n);
      for (std::size_t i = 0; i < n; ++i) p[i] = c[i] + t * (s[worst][i] - c[i]);
      return p;
    };
    const auto r = along(-1.0);
    const double vr = eval(r);
    if (vr < v[best]) {
      const auto e = along(-2.0);
      const double ve = eval(e);
      if (ve < vr) {
        s[worst] = e, v[worst] = ve;
      } else {
        s[worst] = r, v[worst] = vr;
      }
    } else if (vr < v[second]) {
      s[worst] = r, v[worst] = vr;
    } else {
      const bool outside = vr < v[worst];
      const auto k = along(outside ? -0.5 : 0.5);
      const double vk = eval(k);
      if (vk < (outside ? vr : v[worst])) {
        s[worst] = k, v[worst] = vk;
      } else {  // shrink towards the best vertex
        for (std::size_t j = 0; j <= n; ++j) {
          if (j == best) continue;
          for (std::size_t i = 0; i < n; ++i) s[j][i] = s[best][i] + 0.5 * (s[j][i] - s[best][i]);
          v[j] = eval(s[j]);
        }
      }
    }
  }
  const std::size_t b = std::min_element(v.begin(), v.end()) - v.begin();
  res.x.resize(n);
  for (std::size_t i = 0; i < n; ++i) res.x[i] = to_x(s[b][i], bounds[i]);
  res.value = v[b];
  return res;
}

}  // namespace prima::perf
