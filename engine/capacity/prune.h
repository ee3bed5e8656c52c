// Screening a plan's configurations before any simulation: a configuration is pruned when it
// cannot run (divisibility, placement), does not fit in GPU memory (check_plan's verdict), or
// cannot carry the plan's minimum rate by a safe roofline bound on its throughput. The bound
// is an upper bound: decode steps at the largest batch the scheduler allows (max_num_seqs), no
// prefill, no attention context, no communication, no step overhead, ideal pipelining (each
// stage busy all the time), times kRooflineSlack for what a finite probe can absorb in queues
// (a rate slightly over capacity can still meet the SLO over a short window). Equations:
// docs/plan.md. Also builds the scenario JSON of one probe. Pure functions; thread-compatible.
#pragma once

#include <limits>
#include <string>
#include <vector>

#include "engine/capacity/plan_spec.h"
#include "engine/capacity/search_space.h"
#include "engine/scenario/scenario.h"

namespace prima::capacity {

inline constexpr double kRooflineSlack = 2.0;

// The overrides of one probe at `rate_rps`: the arrival rate, the probe duration and drain
// limit, and the plan's SLO bounds as the scenario's per-request SLO.
std::vector<std::string> probe_sets(const PlanSpec& spec, double rate_rps);
// Base scenario + config sets + probe sets; errors name the --set that failed.
Result<config::Json> probe_scenario_json(const PlanSpec& spec, const PlanConfig& c,
                                         double rate_rps);

// Upper bound on the requests/s a scenario's deployment can complete (before the slack).
// Infinite for trace workloads (their lengths are not known here).
double roofline_capacity_rps(const scenario::Scenario& sc);

struct Screening {
  bool pruned = false;
  std::string kind;                                            // "invalid", "memory", "roofline"
  std::string reason;                                          // one line with the numbers
  double bound_rps = std::numeric_limits<double>::infinity();  // with the slack
};
Screening screen_config(const PlanSpec& spec, const PlanConfig& c);

}  // namespace prima::capacity
