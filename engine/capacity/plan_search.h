// The rate search of `prima plan`: each configuration's rate search is sequential; the
// configurations run side by side, one probe each at most, as many at a time as the
// ProbeRunner takes. A probe the cache already holds (the results*.jsonl of the output
// directory: an earlier or interrupted run, other shards) is not simulated again; each new
// probe is appended to the results stream as it finishes, so a rerun resumes. Progress goes to
// an optional callback. Single-threaded.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "engine/capacity/plan_spec.h"
#include "engine/capacity/probe_runner.h"
#include "engine/capacity/rate_search.h"
#include "engine/capacity/searched.h"

namespace prima::capacity {

// Cached simulations: config key -> rate -> metrics.
using PlanCache = std::map<std::string, std::map<double, ProbeMetrics>>;
// Every results*.jsonl in `dir`. A line cut short by a kill is skipped (its simulation is
// simply run again), and `note` (if set) is told which.
PlanCache load_plan_cache(const std::string& dir,
                          const std::function<void(const std::string&)>& note = {});

// How far the search is, for a progress display.
struct SearchProgress {
  std::size_t total = 0, done = 0;
  std::size_t done_before = 0;  // finished from the cache alone, before any new probe
  std::int64_t simulations = 0, reused = 0;
  int running = 0;
  bool final = false;  // the last call
};

struct SearchControl {
  std::int64_t max_simulations = -1;  // stop after this many new simulations (< 0: none)
  std::function<void(const SearchProgress&)> progress;
};

// Runs the searches of `configs` (borrowed, filled with their probes) to their ends, or until
// max_simulations new simulations have started. Writes to `results` (borrowed).
// Not ok: a probe could not be started.
struct PlanSearchResult {
  Status status;
  bool stopped = false;          // max_simulations reached
  std::int64_t started = 0;      // new simulations
  std::int64_t simulations = 0;  // probes recorded, reused ones included
};
PlanSearchResult search_plan(const PlanSpec& spec, const SearchControl& control,
                             const PlanCache& cache, ProbeRunner* runner,
                             std::vector<SearchedConfig>* configs, std::ostream* results);

}  // namespace prima::capacity
