// The rate search of `prima plan`: each configuration's rate search is sequential; the
// configurations run side by side, one probe each at most, up to --jobs simulations at a time
// (each in a child process: sim::ProbePool). A probe the cache already holds (the
// results*.jsonl of the output directory: an earlier or interrupted run, other shards) is not
// simulated again; each new probe is appended to the results file as it finishes, so a rerun
// resumes. Progress is drawn on stderr unless quiet. Not thread-safe (forks).
#pragma once

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "cli/plan_options.h"
#include "cli/plan_runner.h"
#include "engine/capacity/plan_spec.h"
#include "engine/capacity/rate_search.h"

namespace prima::cli {

// Cached simulations: config key -> rate -> metrics.
using PlanCache = std::map<std::string, std::map<double, capacity::ProbeMetrics>>;
// Every results*.jsonl in `dir` (a line cut short by a kill is skipped, with a note unless
// quiet: its simulation is simply run again).
PlanCache load_plan_cache(const std::string& dir, bool quiet);

// Runs the searches of `configs` (borrowed, filled with their probes) to their ends, or until
// --max-simulations new simulations have started. Writes to `results` (borrowed).
// Not ok: a probe could not be started (fork or pipe failed).
struct PlanSearchResult {
  Status status;
  bool stopped = false;          // --max-simulations reached
  std::int64_t started = 0;      // new simulations
  std::int64_t simulations = 0;  // probes recorded, reused ones included
};
PlanSearchResult search_plan(const capacity::PlanSpec& spec, const PlanOptions& o,
                             const PlanCache& cache, std::vector<SearchedConfig>* configs,
                             std::ostream* results);

}  // namespace prima::cli
