// `prima calibrate --engine-points FILE`: an engine profile against published measurements of
// that engine (engine/calib/): each point predicted with the analytic run on the built-in
// hardware profiles, --fit fits the engine's terms (hardware fixed), --cv leaves each source
// out in turn (fit on the others, predict it) and --out writes the engine profile with its
// out-of-sample error per GPU and metric. Prints a table (or JSON). Not thread-safe.
#pragma once

#include "cli/calibrate_options.h"

namespace prima::cli {

// Returns the exit code (0 ok, 1 failure, 2 bad input).
int run_engine_calibration(const CalibrateOptions& o);

}  // namespace prima::cli
