// The fit of `prima calibrate --fit` (see calibrate_fit.h).
#include "cli/calibrate_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>

#include "engine/replay/fit_params.h"

namespace prima::cli {
namespace {

// A start drawn between the bounds: shares uniformly, latencies and counts log-uniformly over
// (max(lo, 1e-4 hi), hi).
std::vector<double> random_start(const FitSpace& space, std::mt19937_64& rng) {
  std::vector<double> x(space.fields.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const auto& b = space.bounds[i];
    const double u = std::uniform_real_distribution<double>(0, 1)(rng);
    if (space.fields[i]->kind == perf::EfficiencyField::kShare ||
        space.fields[i]->kind == perf::EfficiencyField::kOptionalShare) {
      x[i] = b.lo + (b.hi - b.lo) * (0.02 + 0.96 * u);
    } else {
      const double lo = std::max(b.lo, 1e-4 * b.hi) * 1.001, hi = b.hi * 0.999;
      x[i] = lo * std::pow(hi / lo, u);
    }
  }
  return x;
}

}  // namespace

perf::FitBound fit_default_bound(const perf::EfficiencyField& f) {
  perf::FitBound b = replay::fit_bound(f);
  if (!std::isfinite(b.hi)) b.hi = f.kind == perf::EfficiencyField::kSeconds ? 0.1 : 65536.0;
  return b;
}

perf::Efficiency fit_efficiency(const std::vector<perf::CalibrationPoint>& points,
                                const std::string& gpu, const perf::Efficiency& start,
                                const FitSpace& space, const FitSettings& settings) {
  const auto& fields = space.fields;
  const auto& bounds = space.bounds;
  std::vector<double> x0 = replay::get_params(start, fields);
  auto with = [&](const std::vector<double>& x) {
    perf::Efficiency e = start;
    replay::set_params(&e, fields, x);
    return e;
  };
  const double max_error = settings.max_error;
  auto objective = [&](const std::vector<double>& x) {
    const perf::Efficiency e = with(x);
    double sum = 0;
    int n = 0;
    for (const auto& p : points) {
      if (p.gpu.name != gpu) continue;
      const double r = std::log(perf::predict_point(p, e) / p.measured_s);
      sum += r * r;
      if (max_error > 0 && std::abs(r) > max_error)
        sum += 100 * (std::abs(r) - max_error) * (std::abs(r) - max_error);
      ++n;
    }
    return n ? sum / n : 0.0;
  };
  // A start on a bound would pin that coordinate (the change of variables is flat there):
  // start just inside.
  for (std::size_t i = 0; i < x0.size(); ++i) {
    const double span = bounds[i].hi - bounds[i].lo;
    x0[i] = std::clamp(x0[i], bounds[i].lo + 1e-3 * span, bounds[i].hi - 1e-3 * span);
  }
  // Multi-start: the profile's values, then `starts` random points (fixed seed: the same
  // command gives the same profile), each refined by Nelder-Mead with restarts; the best
  // wins. The objective is cheap (microseconds per point) and not convex (the all-reduce
  // takes the fastest algorithm), so one descent is not enough.
  auto descend = [&](const std::vector<double>& x) {
    perf::NelderMeadOptions o;
    o.max_iterations = settings.iterations;
    o.restarts = 4;
    o.f_tolerance = 1e-14;
    auto r = perf::nelder_mead(objective, x, bounds, o);
    return r.ok() ? *r : perf::NelderMeadResult{x, objective(x), 0, 1, false, 0};
  };
  std::mt19937_64 rng(1);
  perf::NelderMeadResult res = descend(x0);
  int evaluations = res.evaluations;
  for (int k = 0; k < settings.starts; ++k) {
    perf::NelderMeadResult r = descend(random_start(space, rng));
    evaluations += r.evaluations;
    if (r.f < res.f) res = r;
    if ((k + 1) % 10 == 0 || k + 1 == settings.starts)
      std::fprintf(stderr, "fit: %d/%d starts, rms log error %.4f\n", k + 1, settings.starts,
                   std::sqrt(res.f));
  }
  std::string names;
  for (const auto* f : fields) names += (names.empty() ? "" : ", ") + std::string(f->name);
  std::fprintf(stderr, "fit: %d evaluations; fitted %s\n", evaluations, names.c_str());
  return with(res.x);
}

}  // namespace prima::cli
