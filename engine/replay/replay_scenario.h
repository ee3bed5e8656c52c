// Turning a scenario into the replay of a measured run: the measured arrivals and lengths
// become a JSONL trace (engine/workload/trace.h) that replaces the scenario's workload, and
// the run lasts long enough to hold every arrival. The rest of the scenario (cluster,
// deployment, scheduler, calibration, priority mix and SLAs for rows without their own) is
// kept. Pure functions apart from writing the trace file.
#pragma once

#include <string>

#include "engine/perf/calibration.h"
#include "engine/replay/measured.h"
#include "engine/scenario/scenario.h"

namespace prima::replay {

// A measured request that completed must fit the scenario's context limit (prompt + output
// <= max_model_len): if it does not, the scenario is not the server that answered it. The
// error names the file, the line and the fields. (A request that failed is replayed as it
// is: the simulated engine refuses it too.)
Status check_fits_scenario(const MeasuredRun& run, const scenario::Scenario& sc);

// Writes the requests as a JSONL trace (arrival_s with every digit, so the simulator sees the
// same doubles; priority when the measured file gave one).
Status write_replay_trace(const MeasuredRun& run, const std::string& path);

// Points the scenario's workload at that trace: type trace, as recorded (no rescaling, no
// loop, no request cap), and duration_s just past the last arrival.
void use_replay_trace(scenario::Scenario* sc, const std::string& trace_path,
                      const MeasuredRun& run);

// The scenario with these efficiency parameters for its GPU (the rest of its calibration
// kept): what each fit evaluation runs.
void set_gpu_efficiency(scenario::Scenario* sc, const perf::Efficiency& e);

}  // namespace prima::replay
