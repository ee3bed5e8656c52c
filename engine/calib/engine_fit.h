// Engine calibration: predicting published measurements of a serving engine (bench_points.h)
// with an engine profile on the built-in hardware profiles, fitting the engine's terms with the
// hardware held fixed, and the error a report states: leave one source out (fit on every other
// source's points, predict the held-out source's), overall and per metric. docs/fidelity.md.
// Stateless; the predictions are the work items of the ParallelFor passed in (each its own
// engine; the CLI runs them on --threads threads).
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/calib/bench_points.h"
#include "engine/config/json_reader.h"
#include "engine/core/parallel.h"
#include "engine/perf/engine_profile.h"
#include "engine/perf/fit.h"

namespace prima::calib {

// The scenario a point describes: its model, quantization and TP on one node of its GPU
// (DGX-A100 or an HGX H100/H200-class node), its workload, the engine (a built-in name, or a
// whole profile inline: its scheduler defaults and KV sizing apply), and the settings the
// source states. A user reproducing the benchmark writes the same.
config::Json point_scenario(const BenchPoint& p, const config::Json& engine);

struct PointPrediction {
  const BenchPoint* point = nullptr;
  double predicted = 0;
  double error = 0;     // (predicted - measured) / measured
  std::string failure;  // why it could not be predicted ("" when it was)
};

struct Evaluation {
  std::vector<PointPrediction> points;
  perf::ErrorSummary all;
  std::map<std::string, perf::ErrorSummary> by_metric;  // ttft, tpot, e2e, throughput
};

// Predicts each point with `engine` (its terms replace the built-in engine's; scheduler and KV
// sizing are the point's engine's, as the source ran it).
Evaluation evaluate(const std::vector<const BenchPoint*>& points, const perf::EngineProfile& engine,
                    const ParallelFor& pfor = serial_for());
perf::ErrorSummary summarize(const std::vector<double>& errors);

// The engine terms a fit moves and their bounds.
struct EngineFitSpace {
  std::vector<std::pair<const perf::EfficiencyField*, perf::FitBound>> params;
  int max_evaluations = 100;
};
// The default space of `engine`: the host's per-step, per-sequence and per-rank costs and the
// kernel gaps inside CUDA graphs; for sglang also the host's launch floor per layer
// (layer_launch_s), which SGLang's eager prefill batches expose (its graphs cover decode only).
EngineFitSpace default_engine_space(const std::string& engine = "");

// Fits `space` of `start`'s terms on `gpu` ("" : the shared terms) to the points (each source
// weighs the same: a point counts 1 / its source's points) and returns the profile with them.
Result<perf::EngineProfile> fit_engine(const std::vector<const BenchPoint*>& points,
                                       const perf::EngineProfile& start,
                                       const EngineFitSpace& space, const std::string& gpu,
                                       const ParallelFor& pfor = serial_for());

// Leave one source out over the points' sources (at least two): each source's points are
// predicted by a fit to the others', each fit starting from the middle of the space (so the
// figure depends on the data and the space only). The out-of-sample error of the fit. With
// `only`, just those sources are held out (each fold is the same as in the full run).
struct CrossValidation {
  Evaluation held_out;
  std::vector<std::string> sources;
};
Result<CrossValidation> cross_validate(const std::vector<const BenchPoint*>& points,
                                       const perf::EngineProfile& start,
                                       const EngineFitSpace& space, const std::string& gpu,
                                       const ParallelFor& pfor = serial_for(),
                                       const std::set<std::string>* only = nullptr);

// The calibrated range of a set of points (engine_profile.h, EngineFidelity).
void note_range(const std::vector<const BenchPoint*>& points, perf::EngineFidelity* f);

}  // namespace prima::calib
