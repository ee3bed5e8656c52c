// The fit of `prima replay --fit`: Nelder–Mead over calibration parameters of the scenario's
// GPU, to one measured run or to several at once. Each evaluation simulates every run with its
// own arrivals and lengths (one child process per simulation) and scores them together with
// replay::joint_fit_objective (with one run, that run's replay::fit_objective). docs/replay.md.
// Not thread-safe (forks).
#pragma once

#include <string>
#include <vector>

#include "cli/replay_output.h"
#include "cli/replay_runner.h"
#include "engine/core/status.h"
#include "engine/perf/calibration.h"
#include "engine/perf/engine_profile.h"
#include "engine/replay/compare.h"
#include "engine/replay/fit_params.h"
#include "engine/replay/measured.h"
#include "engine/scenario/scenario.h"

namespace prima::cli {

// One measured run and its replay. `result.measured` and `result.fit` point into the run
// itself: keep runs where they were made (reserve the vector).
struct ReplayRun {
  replay::MeasuredRun measured;
  replay::Samples measured_samples;
  scenario::Scenario scenario;  // the scenario with this run's requests as its workload
  std::string out_dir;          // where this run's files go
  ReplayResult result;
  ReplayFit fit;
};

// A simulation's failure as an exit code, its message on stderr: bad input when the scenario
// could not run as given, else a failure.
int replay_failed(const Status& st);

// The simulator must have replayed what was measured: the same number of requests, the same
// arrival times and lengths (a 0-token output is generated as 1 token, as a server would).
Status check_reproduced(const replay::MeasuredRun& m,
                        const std::vector<replay::SimulatedRequest>& s);

// Fits `params` from `start` to every run together. Each run's `fit.initial_objective` must be
// set (its objective with `start`). Fills every run's `fit`: the shared values and profile, and
// that run's fitted replay, figures and objective. Returns the exit code.
int fit_runs(const ReplayOptions& o, const perf::Efficiency& start, const replay::FitParams& params,
             std::vector<ReplayRun>* runs);

// The engine profile a fit makes (DIR/engine.json, `prima replay --fit`): the scenario's
// engine with the fitted runs' GPU terms, its in-sample error (the joint fit's figures) and,
// with two runs or more, its out-of-sample error: each run replayed with a fit to the others
// (leave one run out), pooled and per metric. Name the file in a scenario's "engine".
// Returns the exit code; *out is the profile.
int engine_from_fit(const ReplayOptions& o, const perf::Efficiency& start,
                    const replay::FitParams& params, const std::vector<ReplayRun>& runs,
                    perf::EngineProfile* out);

}  // namespace prima::cli
