// Profiler: measures the real CPU backend on this machine (`prima profile`), or the GPU forward
// pass on a device (`--device`), and fits the simulator's calibration to it, so a simulated
// replica of it can be compared with a real run.
//
// What it measures (median of `repeats` runs after a warm-up, on a ThreadPool of `threads`):
//   - the machine: memory read bandwidth (all threads streaming a 512 MiB buffer) and the
//     nominal int8 dot-product peak the quantized matmuls run at (cpu MHz x 128 ops/cycle with
//     AVX-512 VNNI, else 64, x threads); one token's host sampling at temperature 1;
//   - operators over batch sizes: every linear layer of layer 0 and the LM head (matmul), and
//     RMSNorm / RoPE / SwiGLU; attention over context lengths (decode and a prefill chunk);
//   - whole forward steps: decode batches at several contexts and prefill chunks.
// The fit: with the cost model of engine/perf, gemm_compute, gemm_m_half, gemm_memory,
// attention_memory, attention_compute, step_overhead_s and seq_overhead_s are fitted to every
// measured step at once (Nelder-Mead, mean squared log error); layer_overhead_s is the measured
// pool dispatch cost per layer, sampling_logit_s the measured sampling time per logit.
// The result is written as a hardware profile (perf::Profile): the fitted parameters, the
// topology GPU object of this CPU, and the fitted model's error on every measured step.
// Single-threaded driver; not reentrant.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "backends/real/step_forward.h"
#include "engine/core/status.h"
#include "engine/model/model_spec.h"
#include "engine/perf/calibration.h"
#include "engine/plan/topology.h"

namespace prima::real {

class LlamaWeights;

struct ProfileOptions {
  std::string model_path;
  std::string manifest;
  int threads = 0;  // 0: hardware concurrency
  std::vector<int> batches{1, 2, 4, 8, 16, 32, 64, 128};
  std::vector<int> contexts{128, 512, 1024, 2048};
  int repeats = 5;
  std::string name;     // hardware name of the profile (default "cpu:<model name>")
  bool repack = false;  // measure the packed-weight kernels (RealBackendOptions::repack)
  // Profiles a device instead of the CPU (`--device cuda`, `cuda-emu`): makes the rank's GPU
  // forward pass (RealBackendOptions::device_forward's form). Then the machine is the device's
  // figures (StepForward::measure_device), the whole steps run on it, no CPU operator is timed,
  // and the fit is the same.
  std::function<Result<std::unique_ptr<StepForward>>(const LlamaWeights&, int, int, const RankJob&)>
      device_forward;
  // What the device runs the layer matrices as (--quantization), when not the file's types: the
  // profile's quantization (the cost model's bytes per weight and GEMM inputs).
  std::optional<model::Quantization> weights_as;
};

struct OpTiming {
  std::string op;  // "matmul:attn_q", "attention:decode", "rms_norm", ...
  int batch = 0;   // tokens
  int context = 0;
  double seconds = 0;
  double flops = 0;
  double bytes = 0;
};

struct StepTiming {
  std::string kind;  // "decode" or "prefill"
  int seqs = 0;
  int tokens = 0;   // tokens computed
  int context = 0;  // context per sequence after the step
  double seconds = 0;
  double predicted_s = 0;  // cost model with the fitted calibration
  bool fitted = false;     // one of the calibration steps
};

struct ProfileResult {
  std::string cpu;
  std::string isa;
  int threads = 0;
  int repeats = 0;
  std::string model_file;  // as given
  // The format the cost model prices the GGUF's 4-bit weights as (fit and predictions).
  model::Quantization quantization = model::Quantization::kW4A16;
  double mem_bw_Bps = 0;
  double peak_flops = 0;
  double dispatch_s = 0;  // one empty parallel_for; on a device, one small kernel launch
  std::string device;     // the device profiled ("" for the CPU): StepForward::device()
  model::ModelSpec model;
  plan::GpuSpec hardware;
  double sampling_s = 0;  // one token sampled at temperature 1 over the vocabulary
  perf::Efficiency efficiency;
  std::vector<OpTiming> ops;
  std::vector<StepTiming> steps;
};

// progress(line) is called as each measurement ends.
Result<ProfileResult> run_profile(const ProfileOptions& opts,
                                  const std::function<void(const std::string&)>& progress);

// How well the fitted cost model predicts the measured steps: |predicted - measured| /
// measured over every step (the fitted ones included, as calibration_data says).
perf::Fidelity step_fidelity(const ProfileResult& r);

// The hardware profile of this machine: name, description, source (what was measured),
// the fitted efficiency, the fidelity above and the topology GPU object ("gpu": name,
// memory, hbm_bandwidth, fp16_tflops, bf16_tflops, int8_tops).
perf::Profile to_profile(const ProfileResult& r);

// The file `prima profile --out` writes: perf::profile_to_json(to_profile(r)) plus
// "measurements" (machine figures, operator timings, each step with its prediction), which
// perf::parse_profile skips. Readable by perf::load_profile_file and, as a scenario's
// "calibration", by perf::load_calibration_file.
nlohmann::json profile_to_json(const ProfileResult& r);

// The engine terms of the same fit (the host's per-step and per-sequence costs, the thread
// pool's kernel gaps, host sampling) as an engine profile: the built-in prima-cpu with this
// machine's terms for its device (perf::engine_profile_to_json). `prima profile` writes it
// beside the hardware profile (FILE.engine.json); a scenario names it as its "engine".
nlohmann::json engine_to_json(const ProfileResult& r);
// Where `prima profile --out FILE` writes the engine: FILE with ".json" replaced by
// ".engine.json" (or ".engine.json" appended).
std::string engine_path_for(const std::string& profile_path);

}  // namespace prima::real
