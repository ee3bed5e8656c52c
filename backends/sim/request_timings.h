// Per-request timings of one simulation, for `prima replay` to hold against a measurement:
// each request's arrival, lengths, outcome, TTFT, TPOT, E2E, queue time and (optionally) the
// gap before every token after the first (ITL).
//
// simulate_request_timings runs in this process (one SimGrid engine per process: call it
// once); simulate_request_timings_in_child forks, runs it in the child and reads the result
// back through a pipe, so a fit can run one simulation after another. The parent must not hold
// a SimGrid engine. Not thread-safe (forks).
#pragma once

#include <vector>

#include "engine/replay/records.h"
#include "engine/scenario/scenario.h"

namespace prima::sim {

struct RequestTimings {
  std::vector<replay::SimulatedRequest> requests;  // by id: 1, 2, ... in arrival order
  double simulated_s = 0;
  double wall_s = 0;
};

// token_gaps: record every token's gap (costs memory per token; off for fit evaluations).
Result<RequestTimings> simulate_request_timings(const scenario::Scenario& sc, bool token_gaps);

// The same in a forked child. A failure keeps its status code (bad input stays bad input); a
// child that crashed or wrote nothing is an internal error naming the signal or exit status.
// The child's stdout and stderr go to /dev/null.
Result<RequestTimings> simulate_request_timings_in_child(const scenario::Scenario& sc,
                                                         bool token_gaps);

}  // namespace prima::sim
