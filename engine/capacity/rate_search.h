// Rate search for one configuration: the highest request rate at which it meets the plan's
// SLO. Probes min_rps first (failing there ends the search), then doubles the rate up to the
// upper end (max_rps or the roofline bound) until a probe fails, then bisects geometrically
// between the best rate that met and the lowest that failed until they are within the
// relative tolerance. Doubling from below keeps probes out of deep overload, where a
// simulation is slowest. Each probe is one simulation. The search is a deterministic state machine:
// next() names the rate to probe, record() takes the verdict; the same verdicts give the same
// probes, so cached results (results.jsonl) replay it exactly. Also the probe's metrics as read
// from a simulation report, and the SLO verdict on them. Plain values; thread-compatible.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/capacity/plan_spec.h"
#include "engine/config/json_reader.h"

namespace prima::capacity {

struct ProbeMetrics {
  bool ok = false;  // false: the simulation did not run (error says why)
  std::string error;
  double ttft_p99_s = 0, tpot_p99_s = 0, e2e_p99_s = 0;
  double attainment = 0;
  double goodput_rps = 0;
  double throughput_rps = 0;
  double output_tokens_per_s = 0;
  // Mean time per output token: 1 / tpot_mean_s is the tokens/s one user sees (0: unknown,
  // as in results files written before it was recorded).
  double tpot_mean_s = 0;
  // Mean busy fraction of the GPUs (report.json gpus.utilization_mean), for the power model
  // (0: unknown, as in results files written before it was recorded).
  double gpu_utilization = 0;
  // Disaggregated pools of their own shape: each pool's mean busy fraction, prefill first
  // (report.json deployment.pools[].utilization_mean); empty otherwise or unknown.
  std::vector<double> pool_utilization;
  std::int64_t submitted = 0, completed = 0;
  double wall_s = 0;  // wall time of the simulation (not part of any decision)

  config::Json to_json() const;
  static ProbeMetrics from_json(const config::Json& j);         // throws on bad input
  static ProbeMetrics from_report(const config::Json& report);  // a report.json
};

// True when the metrics meet the SLO; otherwise `violations` (if given) says which bound
// failed, e.g. "ttft p99 412 ms > 300 ms".
bool meets_slo(const PlanSlo& slo, const ProbeMetrics& m, std::vector<std::string>* violations);
// How far from the SLO (1 = on the boundary, larger = further): the worst ratio of a p99 to
// its bound or of the target attainment to the achieved one.
double slo_distance(const PlanSlo& slo, const ProbeMetrics& m);

class RateSearch {
 public:
  // Searches [min_rps, max_rps]; stops when hi / lo <= 1 + tolerance.
  RateSearch(double min_rps, double max_rps, double tolerance);

  std::optional<double> next() const;  // nullopt: done
  void record(double rate_rps, bool meets);
  bool done() const { return !next().has_value(); }
  bool any_met() const { return best_ > 0; }
  double best_rps() const { return best_; }           // highest rate that met (0: none)
  double lowest_failed_rps() const { return fail_; }  // lowest rate that failed (0: none)
  int probes() const { return probes_; }

 private:
  static constexpr double kGrowth = 2;
  double min_, max_, tol_;
  double best_ = 0, fail_ = 0;
  int probes_ = 0;
};

}  // namespace prima::capacity
