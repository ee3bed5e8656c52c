// run_simulation: one scenario on the simulated cluster, end to end. Checks the plan against
// the model and topology, builds the SimGrid platform, one SimExecutor per replica, the
// engine's ServingEngine and the workload driver, runs the simulation until every request has
// ended (or the drain limit), and builds the report. One call per process (SimGrid allows one
// engine per process). Not thread-safe.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "engine/metrics/recorder.h"
#include "engine/plan/parallel_plan.h"
#include "engine/scenario/scenario.h"

namespace prima::sim {

struct Progress {
  double sim_s = 0;       // simulated clock
  double duration_s = 0;  // arrival window of the scenario
  double wall_s = 0;
  std::int64_t submitted = 0, ended = 0, in_system = 0;
};

struct SimulationOptions {
  // Called about every `progress_every_wall_s` of wall time (never when null).
  std::function<void(const Progress&)> progress;
  double progress_every_wall_s = 1.0;
  // Called at every output token a request produces, with the simulated time (never when
  // null). For per-token gaps (ITL).
  std::function<void(const Sequence&, Time)> on_token;
};

struct SimulationOutput {
  std::unique_ptr<metrics::Recorder> recorder;
  nlohmann::ordered_json report;
  plan::MemoryFit fit;
  double wall_seconds = 0;
};

// Checks that the scenario's plan can run (divisibility, GPU count, memory fit). The error
// names the scenario file and the deployment.
Result<plan::MemoryFit> check_scenario_plan(const scenario::Scenario& sc);

Result<SimulationOutput> run_simulation(const scenario::Scenario& sc,
                                        const SimulationOptions& opts = {});

}  // namespace prima::sim
