// A simulated twin of this machine from its profile (`prima profile --topology-out FILE
// --scenario-out FILE`): a one-node, one-device topology whose GPU is the profile's GPU object,
// and a scenario that runs the profiled model on it the way `prima serve --backend real`
// serves it by default (its scheduler limits and KV cache), with the profile as the
// scenario's calibration. So profile -> simulate is one command each way, and the
// simulated figures say, through the report's "fidelity", how far they can be trusted.
// Pure functions over their inputs; thread-compatible.
#pragma once

#include <cstdint>
#include <string>

#include "backends/real/profiler.h"
#include "engine/config/json_reader.h"
#include "engine/core/status.h"

namespace prima::real {

// The limits a real server runs one replica with (what `prima serve` prints and /health
// exports as "limits").
struct ServedLimits {
  int max_num_seqs = 0;
  int max_num_batched_tokens = 0;
  int block_size = 0;
  int max_model_len = 0;
  std::int64_t kv_blocks = 0;
};

// {"name", "description", "source", "gpu": the profile's GPU object, "nodes": 1, "node":
// {"gpus": 1, ...}, "fabric"}. The links a topology requires are local copies: NVLink and
// PCIe (KV swap to host memory) at half the measured read bandwidth (a copy reads and writes);
// the NIC and fabric are unused with one node and carry the same figure, said so in "source".
config::Json single_device_topology(const ProfileResult& r, const std::string& name);

// A scenario over `topology` (inlined, so it loads from any directory): the profiled model
// (its architecture from the GGUF file), r.quantization, one replica with `limits` (the KV
// cache is sized to limits.kv_blocks through deployment.gpu_memory_utilization, since the
// device's memory is the whole host memory), "calibration": `calibration_path` (as written
// into the file: relative to the scenario's directory, or absolute; the file must exist), and
// "engine": engine_path (the engine terms prima profile fitted: engine_to_json, written the same
// way), a closed-loop workload of limits.max_num_seqs users with prompts and outputs that fit
// max_model_len. Its name is the stem of `scenario_path`, where it will be written.
// Errors: the scenario does not parse, or the KV cache cannot be sized to limits.kv_blocks.
Result<config::Json> profile_scenario(const ProfileResult& r, const config::Json& topology,
                                      const ServedLimits& limits,
                                      const std::string& calibration_path,
                                      const std::string& engine_path,
                                      const std::string& scenario_path);

}  // namespace prima::real
