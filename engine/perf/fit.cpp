// Nelder–Mead with bounds by a change of variables (fit.h). Standard coefficients: reflection
// 1, expansion 2, contraction 1/2, shrink 1/2 (Lagarias et al., "Convergence properties of
// the Nelder–Mead simplex method in low dimensions", 1998).
#include "engine/perf/fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

namespace prima::perf {
namespace {

constexpr double kHalfPi = 1.5707963267948966;

// x = T(z) and its inverse for one coordinate.
struct Transform {
  FitBound b;
  bool has_lo() const { return std::isfinite(b.lo); }
  bool has_hi() const { return std::isfinite(b.hi); }
  double to_x(double z) const {
    if (has_lo() && has_hi()) {
      const double x = b.lo + (b.hi - b.lo) * (std::sin(z) + 1) / 2;
      return std::clamp(x, b.lo, b.hi);  // rounding must not step outside
    }
    if (has_lo()) return b.lo + z * z;
    if (has_hi()) return b.hi - z * z;
    return z;
  }
  double to_z(double x) const {
    if (has_lo() && has_hi())
      return std::asin(std::clamp(2 * (x - b.lo) / (b.hi - b.lo) - 1, -1.0, 1.0));
    if (has_lo()) return std::sqrt(std::max(0.0, x - b.lo));
    if (has_hi()) return std::sqrt(std::max(0.0, b.hi - x));
    return x;
  }
};

struct Vertex {
  std::vector<double> z;
  double f = 0;
};

}  // namespace

Result<NelderMeadResult> nelder_mead(const Objective& f, const std::vector<double>& x0,
                                     const std::vector<FitBound>& bounds,
                                     const NelderMeadOptions& opts) {
  const std::size_t n = x0.size();
  if (n == 0) return invalid_argument("nelder_mead: no parameters to fit");
  if (bounds.size() != n)
    return invalid_argument(
        fmt::format("nelder_mead: {} bounds for {} parameters", bounds.size(), n));
  if (!opts.initial_step.empty() && opts.initial_step.size() != n)
    return invalid_argument(fmt::format("nelder_mead: {} initial steps for {} parameters",
                                        opts.initial_step.size(), n));
  std::vector<Transform> t(n);
  std::vector<double> z0(n);
  for (std::size_t i = 0; i < n; ++i) {
    const FitBound& b = bounds[i];
    if (!(b.lo < b.hi))
      return invalid_argument(
          fmt::format("nelder_mead: parameter {}: bounds [{}, {}] are empty", i, b.lo, b.hi));
    if (!std::isfinite(x0[i]) || x0[i] < b.lo || x0[i] > b.hi)
      return invalid_argument(
          fmt::format("nelder_mead: parameter {}: start {} is outside its bounds [{}, {}]", i,
                      x0[i], b.lo, b.hi));
    t[i].b = b;
    z0[i] = t[i].to_z(x0[i]);
  }

  NelderMeadResult res;
  auto to_x = [&](const std::vector<double>& z) {
    std::vector<double> x(n);
    for (std::size_t i = 0; i < n; ++i) x[i] = t[i].to_x(z[i]);
    return x;
  };
  auto eval = [&](const std::vector<double>& z) {
    ++res.evaluations;
    const double v = f(to_x(z));
    return std::isfinite(v) ? v : std::numeric_limits<double>::infinity();
  };

  // A first simplex around x: x, and one vertex per coordinate moved by its step (in x
  // units, taken inward when going outward would cross the bound, or when the nearer bound is
  // on the outward side).
  std::vector<double> steps(n);
  for (std::size_t i = 0; i < n; ++i) {
    steps[i] = opts.initial_step.empty() ? (x0[i] != 0 ? 0.1 * std::abs(x0[i]) : 0.1)
                                         : std::abs(opts.initial_step[i]);
    if (!(steps[i] > 0) || !std::isfinite(steps[i]))
      return invalid_argument(fmt::format("nelder_mead: parameter {}: the initial step is 0", i));
  }
  std::vector<double> scale(n);  // the first simplex's size per z coordinate
  std::vector<Vertex> s(n + 1);
  auto build = [&](const Vertex& center) -> Status {
    const std::vector<double> xc = to_x(center.z);
    s[0] = center;
    for (std::size_t i = 0; i < n; ++i) {
      const FitBound& b = bounds[i];
      double xi = xc[i] + steps[i];
      if (xi > b.hi || (xc[i] - steps[i] >= b.lo && b.hi - xc[i] < xc[i] - b.lo))
        xi = xc[i] - steps[i];
      xi = std::clamp(xi, b.lo, b.hi);
      s[i + 1].z = center.z;
      s[i + 1].z[i] = t[i].to_z(xi);
      scale[i] = std::abs(s[i + 1].z[i] - center.z[i]);
      if (!(scale[i] > 0))
        return invalid_argument(fmt::format(
            "nelder_mead: parameter {}: the initial step {} does not move from {} within [{}, {}]",
            i, steps[i], xc[i], b.lo, b.hi));
      s[i + 1].f = eval(s[i + 1].z);
    }
    return ok_status();
  };
  Vertex start{z0, 0};
  start.f = eval(z0);
  PRIMA_RETURN_IF_ERROR(build(start));

  auto order = [&] {
    std::stable_sort(s.begin(), s.end(),
                     [](const Vertex& a, const Vertex& b) { return a.f < b.f; });
  };
  auto converged = [&] {
    const double spread = s[n].f - s[0].f;
    if (!(spread <= opts.f_tolerance)) return false;
    for (std::size_t k = 1; k <= n; ++k)
      for (std::size_t i = 0; i < n; ++i)
        if (std::abs(s[k].z[i] - s[0].z[i]) > opts.x_tolerance * scale[i]) return false;
    return true;
  };
  // Small: every vertex within 1/100 of the first simplex's size of the best one.
  auto small = [&] {
    for (std::size_t k = 1; k <= n; ++k)
      for (std::size_t i = 0; i < n; ++i)
        if (std::abs(s[k].z[i] - s[0].z[i]) > 0.01 * scale[i]) return false;
    return true;
  };
  // A point on the line from the centroid through the worst vertex: c + coef (c - worst).
  auto along = [&](const std::vector<double>& c, double coef) {
    std::vector<double> z(n);
    for (std::size_t i = 0; i < n; ++i) z[i] = c[i] + coef * (c[i] - s[n].z[i]);
    return z;
  };

  order();
  double f_at_restart = std::numeric_limits<double>::infinity();
  while (res.iterations < opts.max_iterations) {
    // A converged or shrunken simplex restarts while restarts remain and the last restart (if
    // any) gained more than 0.1%; else a converged simplex ends the search and a small one
    // crawls on.
    const bool done = converged();
    const bool gained = !std::isfinite(f_at_restart) ||
                        f_at_restart - s[0].f > 1e-3 * std::abs(f_at_restart) + opts.f_tolerance;
    if ((done || small()) && res.restarts < opts.restarts && gained) {
      ++res.restarts;
      f_at_restart = s[0].f;
      if (Status st = build(s[0]); !st.ok()) break;  // cannot move from here: keep the best
      order();
      ++res.iterations;
      if (opts.on_iteration)
        opts.on_iteration({res.iterations, res.evaluations, s[0].f, to_x(s[0].z), "restart"});
      continue;
    }
    if (done) break;
    ++res.iterations;
    std::vector<double> c(n, 0.0);  // centroid of all but the worst
    for (std::size_t k = 0; k < n; ++k)
      for (std::size_t i = 0; i < n; ++i) c[i] += s[k].z[i] / static_cast<double>(n);
    const char* step = "reflect";
    std::vector<double> zr = along(c, 1.0);
    const double fr = eval(zr);
    if (fr < s[0].f) {
      std::vector<double> ze = along(c, 2.0);
      const double fe = eval(ze);
      if (fe < fr) {
        s[n] = {std::move(ze), fe};
        step = "expand";
      } else {
        s[n] = {std::move(zr), fr};
      }
    } else if (fr < s[n - 1].f) {
      s[n] = {std::move(zr), fr};
    } else {
      // Contract: outside (between c and the reflected point) when that beat the worst,
      // else inside (between c and the worst).
      const bool outside = fr < s[n].f;
      std::vector<double> zc = along(c, outside ? 0.5 : -0.5);
      const double fc = eval(zc);
      if (fc < (outside ? fr : s[n].f)) {
        s[n] = {std::move(zc), fc};
        step = "contract";
      } else {
        for (std::size_t k = 1; k <= n; ++k) {
          for (std::size_t i = 0; i < n; ++i) s[k].z[i] = s[0].z[i] + 0.5 * (s[k].z[i] - s[0].z[i]);
          s[k].f = eval(s[k].z);
        }
        step = "shrink";
      }
    }
    order();
    if (opts.on_iteration)
      opts.on_iteration({res.iterations, res.evaluations, s[0].f, to_x(s[0].z), step});
  }
  res.converged = converged();
  res.x = to_x(s[0].z);
  res.f = s[0].f;
  return res;
}

}  // namespace prima::perf
