// Calibration: efficiency factors that turn peak figures into achieved ones. Written by
// `prima profile` from the real backend, read by the cost model. Defaults are conservative
// public figures (see docs/cost-model.md). Plain values; thread-compatible.
#pragma once

#include <map>
#include <string>

#include "engine/config/json_reader.h"
#include "engine/core/status.h"

namespace prima::perf {

struct Efficiency {
  double gemm_compute = 0.75;  // share of peak tensor FLOP/s reached by large GEMMs
  double gemm_memory = 0.85;   // share of HBM bandwidth reached streaming weights
  double attention_compute = 0.5;
  double attention_memory = 0.75;
  double elementwise_memory = 0.6;    // norms, RoPE, activations, residuals
  double allreduce_bandwidth = 0.8;   // share of link bandwidth a ring all-reduce reaches
  double allreduce_latency_s = 8e-6;  // per ring step (NCCL launch + hop)
  double p2p_latency_s = 5e-6;        // pipeline send
  double step_overhead_s = 1.5e-3;    // scheduling, sampling, kernel launches per step
  double layer_overhead_s = 10e-6;    // kernel launches per layer
};

struct Calibration {
  Efficiency defaults;
  std::map<std::string, Efficiency> per_gpu;  // by GpuSpec::name
  const Efficiency& for_gpu(const std::string& gpu) const;
};

// {"defaults": {...}, "gpus": {"A100-SXM4-80GB": {...}}}; any field may be omitted.
Calibration parse_calibration(const config::JsonReader& r);
Result<Calibration> load_calibration_file(const std::string& path);

}  // namespace prima::perf
