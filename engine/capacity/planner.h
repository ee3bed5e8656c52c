// The planner: one capacity search from a parsed plan to plan.json, with no command line in
// the way, so the CLI (`prima plan`), a test or a batch job drives it the same way. It checks
// the base scenario, enumerates and screens the space (search_space.h, prune.h), keeps its
// shard, runs the rate searches on a ProbeRunner with the results*.jsonl of the output
// directory as a cache (resume), answers a target rate down to the smallest configuration
// (plan_target.h), and writes DIR/plan.json. Single-threaded; the ProbeRunner is borrowed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "engine/capacity/plan_search.h"
#include "engine/capacity/plan_spec.h"
#include "engine/capacity/probe_runner.h"
#include "engine/capacity/searched.h"
#include "engine/perf/calibration.h"

namespace prima::capacity {

struct PlannerOptions {
  std::string out_dir;                   // results*.jsonl and plan.json (created if missing)
  int shard_index = 0, shard_count = 1;  // search every shard_count-th configuration only
  SearchControl search;                  // max_simulations, progress
  std::function<void(const std::string&)> note;  // remarks for the user (unreadable lines)
  std::function<double()> clock_s;               // seconds, for plan.json's wall_seconds
};

// The space after screening: what is left to search, what was pruned and why, and how far the
// cost model can be trusted on each GPU type of the space.
struct Screened {
  std::vector<SearchedConfig> to_search;
  std::vector<PrunedConfig> pruned;
  std::map<std::string, config::Json> fidelity;  // perf::trust_json of each GPU type
  std::size_t total_configs = 0;
};

struct PlanOutcome {
  Screened screened;        // to_search: this shard's, with their probes
  PlanSearchResult search;  // search.stopped: max_simulations reached (no plan.json)
  config::Json plan;        // plan.json (null for a shard or a stopped search)
  std::string results_path;
};

// Enumerates and screens the space. invalid_argument: the base scenario cannot be searched, a
// GPU of the space has no price, or no combination can run.
Result<Screened> screen_plan(const PlanSpec& spec);

// The whole search. invalid_argument: bad input (as screen_plan); other errors: the run failed
// (a probe could not start, a file could not be written).
Result<PlanOutcome> run_planner(const PlanSpec& spec, const PlannerOptions& o, ProbeRunner* runner);

// DIR/results.jsonl, or DIR/results.shard-i-of-n.jsonl for a shard.
std::string results_path(const PlannerOptions& o);

}  // namespace prima::capacity
