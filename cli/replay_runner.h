// The `prima replay` driver: reads a measured run, replays exactly its arrivals and lengths on
// the scenario's simulated cluster (one simulation per child process), compares TTFT, TPOT,
// ITL, E2E and queue time, optionally fits calibration parameters with Nelder–Mead (one
// simulation per evaluation, replay_fit.h), and writes DIR/comparison.json,
// DIR/comparison.html, DIR/per_request.csv, DIR/trace.jsonl (and DIR/profile.json with --fit).
// With several measured runs (--fit only) the fit is to all of them together: each run's files
// go to DIR/run<K>/ (K from 1, in the order given), DIR/fit.json and DIR/profile.json hold the
// joint fit. docs/replay.md. Not thread-safe (forks).
#pragma once

#include "cli/replay_options.h"

namespace prima::cli {

// Returns the process exit code: 0 ok, 1 a simulation failed, 2 bad input.
int run_replay(const ReplayOptions& o);

}  // namespace prima::cli
