// `prima calibrate --fit`: fits parameters of one GPU's efficiency profile to its calibration
// points: a multi-start Nelder–Mead on the mean squared log error of the cost model's
// predictions, within bounds. Plain functions; prints progress lines to stderr.
#pragma once

#include <string>
#include <vector>

#include "engine/perf/calibration.h"
#include "engine/perf/calibration_set.h"
#include "engine/perf/fit.h"

namespace prima::cli {

// The parameters fitted (--fit) and the range of each (--bound, else fit_default_bound()).
struct FitSpace {
  std::vector<const perf::EfficiencyField*> fields;
  std::vector<perf::FitBound> bounds;  // one per field
};

struct FitSettings {
  int iterations = 2000;  // Nelder-Mead iterations per start
  int starts = 40;        // random starts besides the profile's values
  double max_error = 0;   // > 0: steep penalty for each point whose |log error| passes it
};

// The parameter's physical range (replay::fit_bound), with the open upper ends closed (random
// starts are drawn between the bounds): latencies up to 100 ms, counts up to 65536.
perf::FitBound fit_default_bound(const perf::EfficiencyField& f);

// `start` with the parameters of `space` fitted to the points of `gpu`. The same inputs give
// the same result (the random starts come from a fixed seed).
perf::Efficiency fit_efficiency(const std::vector<perf::CalibrationPoint>& points,
                                const std::string& gpu, const perf::Efficiency& start,
                                const FitSpace& space, const FitSettings& settings);

}  // namespace prima::cli
