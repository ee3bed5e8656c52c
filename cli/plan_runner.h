// The `prima plan` driver: loads and screens the plan, runs the rate search of every
// remaining configuration (of this shard) with one simulation per child process, streams each
// finished simulation to DIR/results.jsonl (reused on the next run: resume), and writes
// DIR/plan.json, prints the ranking and renders DIR/report.html. Not thread-safe (forks).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cli/plan_options.h"
#include "engine/capacity/plan_spec.h"
#include "engine/capacity/rate_search.h"
#include "engine/capacity/search_space.h"
#include "engine/config/json_reader.h"
#include "engine/perf/calibration.h"

namespace prima::cli {

// Returns the process exit code (0 ok, 1 failure or stopped early, 2 bad input).
int run_plan(const PlanOptions& opts);

// One searched configuration, for the output.
struct SearchedConfig {
  capacity::PlanConfig config;
  double bound_rps = 0;
  capacity::RateSearch search{1, 1, 0.05};
  // Probes in the order made: (rate, metrics).
  std::vector<std::pair<double, capacity::ProbeMetrics>> probes;
};
struct PrunedConfig {
  capacity::PlanConfig config;
  std::string kind, reason;
};

// Builds plan.json (plan_output.cpp). `fidelity`: how far the cost model can be trusted on
// each GPU type of the space (perf::resolve of the base scenario's calibration), by GPU name.
config::Json build_plan_json(const capacity::PlanSpec& spec,
                             const std::vector<SearchedConfig>& searched,
                             const std::vector<PrunedConfig>& pruned,
                             const std::map<std::string, perf::Fidelity>& fidelity,
                             std::int64_t simulations, double wall_s, std::size_t total_configs);
// Prints the ranking (or the closest candidates) to stdout.
void print_plan_summary(const config::Json& plan, const std::string& out_dir);

}  // namespace prima::cli
