// The calibration set: published measurements (data/calibration/published.json) that a
// hardware profile is fitted to and checked against. Each point is one engine step (a
// prefill or a decode batch of a model on a GPU type at a TP degree) or one all-reduce; the
// cost model predicts it from a profile's parameters. Plain values; thread-compatible.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/model/model_spec.h"
#include "engine/perf/calibration.h"
#include "engine/plan/topology.h"

namespace prima::perf {

struct CalibrationPoint {
  enum Kind { kStep, kAllreduce, kGemm, kStream, kAttention };
  std::string id;      // e.g. "S1 llama-2-70b H100 TP8 prefill 2048 tok"
  std::string source;  // its row in ../shared/data/published-calibration.md
  Kind kind = kStep;
  plan::GpuSpec gpu;
  plan::LinkSpec link;  // the GPU's NVLink, each way
  // kStep
  model::ModelSpec model;
  model::Quantization quantization = model::Quantization::kFP16;
  int tensor_parallel = 1;
  bool prefill = true;
  std::string engine = "splitwise-2023";  // the serving engine measured (its terms are used)
  int batch = 1;
  int tokens = 0;   // prefill: prompt tokens per sequence
  int context = 0;  // decode: context per sequence
  // kAllreduce
  int ranks = 0;
  bool oneshot = false;  // a custom one-shot kernel (vLLM's, TensorRT-LLM's), not NCCL
  double bytes = 0;      // also kStream: bytes moved (read + write)
  // kGemm: an M x K by K x N GEMM in `quantization`
  double m = 0, n = 0, k = 0;
  // kAttention: a fused prefill attention kernel over `batch` sequences of `tokens`
  int heads = 0, head_dim = 0;
  bool causal = true;
  double measured_s = 0;
};

// Reads {"points": [...]} (format: data/calibration/published.json); errors name the file,
// the point and the key.
Result<std::vector<CalibrationPoint>> load_calibration_points(const std::string& path);

// The cost model's prediction of one point with parameters e (both axes: a step point is the
// hardware with the engine that was measured; the microbenchmarks use only hardware terms).
double predict_point(const CalibrationPoint& p, const Efficiency& e);

struct PointResult {
  const CalibrationPoint* point = nullptr;
  double predicted_s = 0;
  double error = 0;  // (predicted - measured) / measured
};

struct Evaluation {
  std::vector<PointResult> points;
  Fidelity fidelity;  // points, median / p90 / max absolute error (profile fields left empty)
};

// Evaluates the points of GPU `gpu` ("" = every point) with the parameters `params(gpu)`.
Evaluation evaluate_points(const std::vector<CalibrationPoint>& points, const std::string& gpu,
                           const std::function<Efficiency(const std::string&)>& params);

}  // namespace prima::perf
