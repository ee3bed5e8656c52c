// Comparing a measured run with its simulated replay: for TTFT, TPOT, ITL, E2E and queue
// time, the mean, p50, p90 and p99 on each side and the signed relative error
// (simulated - measured) / measured; the fit objective built from them; and the figures as
// JSON, a table and a Fidelity (how far the simulation was off). Percentiles are
// engine/metrics/summary.h's (linear between ranks, numpy's default). Pure functions.
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/perf/calibration.h"
#include "engine/replay/records.h"

namespace prima::replay {

enum class Metric { kTtft, kTpot, kItl, kE2e, kQueue };
inline constexpr int kNumMetrics = 5;
const char* metric_name(Metric m);  // "ttft", "tpot", "itl", "e2e", "queue"

enum class Stat { kMean, kP50, kP90, kP99 };
inline constexpr int kNumStats = 4;
const char* stat_name(Stat s);  // "mean", "p50", "p90", "p99"

// Per metric, the values of the requests that completed (ITL: every gap).
struct Samples {
  std::array<std::vector<double>, kNumMetrics> values;
  const std::vector<double>& of(Metric m) const { return values[static_cast<int>(m)]; }
};
Samples measured_samples(const std::vector<MeasuredRequest>& requests);
// ITL: the recorded gaps between tokens; a request without them counts its TPOT once per gap.
Samples simulated_samples(const std::vector<SimulatedRequest>& requests);

// A figure on both sides; NaN where a side has no value (not measured, nothing completed).
struct StatComparison {
  double measured = 0, simulated = 0, error = 0;
};
struct MetricComparison {
  std::size_t measured_count = 0, simulated_count = 0;
  std::array<StatComparison, kNumStats> stats;
  const StatComparison& at(Stat s) const { return stats[static_cast<int>(s)]; }
};
struct Comparison {
  std::array<MetricComparison, kNumMetrics> metrics;
  const MetricComparison& at(Metric m) const { return metrics[static_cast<int>(m)]; }
};

Comparison compare(const Samples& measured, const Samples& simulated);

// What --fit minimises: the mean of ln(simulated / measured)^2 over TTFT, TPOT and E2E at
// mean and p90, counting each figure both sides have (a simulated 0 counts as 1e-12 s). NaN
// when there is none.
double fit_objective(const Comparison& c);
// How many figures fit_objective uses.
int fit_objective_terms(const Comparison& c);
// A fit to several runs at once: the mean of the runs' fit_objective, each run counting the
// same whatever its size. NaN when there is no run or a run has no figure to compare.
double joint_fit_objective(const std::vector<Comparison>& runs);

// The absolute relative errors of every compared figure as a Fidelity (points, median, p90,
// max); `calibration_data` says what was compared.
perf::Fidelity comparison_fidelity(const Comparison& c, const std::string& calibration_data);
// The same over several runs' figures pooled.
perf::Fidelity comparison_fidelity(const std::vector<Comparison>& runs,
                                   const std::string& calibration_data);

// {"ttft": {"count": {"measured": N, "simulated": M}, "mean": {"measured", "simulated",
// "error"}, "p50": ..., "p90": ..., "p99": ...}, "tpot": ...}; null where NaN.
nlohmann::ordered_json comparison_to_json(const Comparison& c);
// A fixed-width table in milliseconds, one row per metric and figure.
std::string comparison_table(const Comparison& c);

}  // namespace prima::replay
