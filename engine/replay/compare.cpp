// Measured vs simulated figures, the fit objective and their renderings (compare.h).
#include "engine/replay/compare.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/metrics/summary.h"

namespace prima::replay {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void add(Samples* s, Metric m, double v) {
  if (v >= 0) s->values[static_cast<int>(m)].push_back(v);
}

std::array<double, kNumStats> stats_of(const std::vector<double>& v) {
  if (v.empty()) return {kNaN, kNaN, kNaN, kNaN};
  const metrics::Summary s = metrics::summarize(v);
  return {s.mean, s.p50, s.p90, s.p99};
}

}  // namespace

const char* metric_name(Metric m) {
  static const char* kNames[] = {"ttft", "tpot", "itl", "e2e", "queue"};
  return kNames[static_cast<int>(m)];
}

const char* stat_name(Stat s) {
  static const char* kNames[] = {"mean", "p50", "p90", "p99"};
  return kNames[static_cast<int>(s)];
}

Samples measured_samples(const std::vector<MeasuredRequest>& requests) {
  Samples s;
  for (const auto& r : requests) {
    if (!r.ok) continue;
    add(&s, Metric::kTtft, r.ttft_s);
    add(&s, Metric::kTpot, r.tpot_s);
    add(&s, Metric::kE2e, r.e2e_s);
    add(&s, Metric::kQueue, r.queue_s);
    for (double g : r.itl_s) add(&s, Metric::kItl, g);
  }
  return s;
}

Samples simulated_samples(const std::vector<SimulatedRequest>& requests) {
  Samples s;
  for (const auto& r : requests) {
    if (!r.ok) continue;
    add(&s, Metric::kTtft, r.ttft_s);
    add(&s, Metric::kTpot, r.tpot_s);
    add(&s, Metric::kE2e, r.e2e_s);
    add(&s, Metric::kQueue, r.queue_s);
    if (!r.itl_s.empty()) {
      for (double g : r.itl_s) add(&s, Metric::kItl, g);
    } else if (r.tpot_s >= 0) {
      for (int k = 1; k < r.output_tokens; ++k) add(&s, Metric::kItl, r.tpot_s);
    }
  }
  return s;
}

Comparison compare(const Samples& measured, const Samples& simulated) {
  Comparison c;
  for (int m = 0; m < kNumMetrics; ++m) {
    MetricComparison& mc = c.metrics[m];
    mc.measured_count = measured.values[m].size();
    mc.simulated_count = simulated.values[m].size();
    const auto a = stats_of(measured.values[m]), b = stats_of(simulated.values[m]);
    for (int s = 0; s < kNumStats; ++s) {
      StatComparison& sc = mc.stats[s];
      sc.measured = a[s];
      sc.simulated = b[s];
      // A measured 0 (e.g. no queueing at all) has no relative error, unless both are 0.
      sc.error = a[s] > 0 && std::isfinite(b[s]) ? (b[s] - a[s]) / a[s]
                 : a[s] == 0 && b[s] == 0        ? 0
                                                 : kNaN;
    }
  }
  return c;
}

namespace {
template <typename Fn>
void for_each_objective_term(const Comparison& c, Fn fn) {
  for (Metric m : {Metric::kTtft, Metric::kTpot, Metric::kE2e})
    for (Stat s : {Stat::kMean, Stat::kP90}) {
      const StatComparison& sc = c.at(m).at(s);
      if (!(sc.measured > 0) || !std::isfinite(sc.simulated)) continue;
      fn(std::log(std::max(sc.simulated, 1e-12) / sc.measured));
    }
}
}  // namespace

double fit_objective(const Comparison& c) {
  double sum = 0;
  int n = 0;
  for_each_objective_term(c, [&](double l) {
    sum += l * l;
    ++n;
  });
  return n > 0 ? sum / n : kNaN;
}

int fit_objective_terms(const Comparison& c) {
  int n = 0;
  for_each_objective_term(c, [&](double) { ++n; });
  return n;
}

double joint_fit_objective(const std::vector<Comparison>& runs) {
  double sum = 0;
  for (const Comparison& c : runs) sum += fit_objective(c);  // NaN stays NaN
  return runs.empty() ? kNaN : sum / static_cast<double>(runs.size());
}

perf::Fidelity comparison_fidelity(const Comparison& c, const std::string& calibration_data) {
  return comparison_fidelity(std::vector<Comparison>{c}, calibration_data);
}

perf::Fidelity comparison_fidelity(const std::vector<Comparison>& runs,
                                   const std::string& calibration_data) {
  std::vector<double> errs;
  for (const Comparison& c : runs)
    for (const auto& mc : c.metrics)
      for (const auto& sc : mc.stats)
        if (std::isfinite(sc.error)) errs.push_back(sc.error);
  perf::Fidelity f;
  f.calibration_data = calibration_data;
  perf::summarize_errors(errs, &f);
  return f;
}

nlohmann::ordered_json comparison_to_json(const Comparison& c) {
  auto num = [](double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nullptr; };
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  for (int m = 0; m < kNumMetrics; ++m) {
    const MetricComparison& mc = c.metrics[m];
    nlohmann::ordered_json mj;
    mj["count"] = {{"measured", mc.measured_count}, {"simulated", mc.simulated_count}};
    for (int s = 0; s < kNumStats; ++s) {
      const StatComparison& sc = mc.stats[s];
      mj[stat_name(static_cast<Stat>(s))] = {{"measured", num(sc.measured)},
                                             {"simulated", num(sc.simulated)},
                                             {"error", num(sc.error)}};
    }
    j[metric_name(static_cast<Metric>(m))] = std::move(mj);
  }
  return j;
}

std::string comparison_table(const Comparison& c) {
  auto ms = [](double v) {
    return std::isfinite(v) ? fmt::format("{:>12.2f}", v * 1e3) : fmt::format("{:>12}", "-");
  };
  std::string out = fmt::format("  {:<6} {:<5} {:>12} {:>12} {:>9}\n", "metric", "stat",
                                "measured ms", "simulated ms", "error");
  for (int m = 0; m < kNumMetrics; ++m) {
    const MetricComparison& mc = c.metrics[m];
    for (int s = 0; s < kNumStats; ++s) {
      const StatComparison& sc = mc.stats[s];
      const std::string err = std::isfinite(sc.error) ? fmt::format("{:>+8.1f}%", sc.error * 100)
                                                      : fmt::format("{:>9}", "-");
      out +=
          fmt::format("  {:<6} {:<5} {} {} {}\n", s == 0 ? metric_name(static_cast<Metric>(m)) : "",
                      stat_name(static_cast<Stat>(s)), ms(sc.measured), ms(sc.simulated), err);
    }
  }
  return out;
}

}  // namespace prima::replay
