// The calibration parameters `prima replay --fit` moves: named keys of
// perf::efficiency_fields() (the table of every Efficiency parameter and its kind), their
// physical range as a fit bound, the size of the first simplex step, and reading/writing them
// in an Efficiency. Pure functions.
#pragma once

#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/perf/calibration.h"
#include "engine/perf/fit.h"

namespace prima::replay {

// The default set: what a serving measurement constrains best (compute and memory shares of
// the GEMMs, per-step and per-sequence host overheads).
inline constexpr const char* kDefaultFitParams =
    "gemm_compute,gemm_memory,step_overhead_s,seq_overhead_s";

using FitParams = std::vector<const perf::EfficiencyField*>;

// "a,b,c" to fields; an unknown or repeated name is an error naming it and the valid names.
Result<FitParams> parse_fit_params(const std::string& list);
// Every parameter name, comma-separated (for --help and messages).
std::string fit_param_names();

// The physical range of a parameter's kind: shares [0.01, 1] (0 would make time infinite),
// optional shares [0, 1], seconds and counts [0, inf).
perf::FitBound fit_bound(const perf::EfficiencyField& f);
// The first simplex step from `value`: 0.1 for shares, half the value for seconds and counts
// (100 us when the value is under 1 ns, 1 when a count is 0).
double fit_initial_step(const perf::EfficiencyField& f, double value);

std::vector<double> get_params(const perf::Efficiency& e, const FitParams& p);
void set_params(perf::Efficiency* e, const FitParams& p, const std::vector<double>& x);

}  // namespace prima::replay
