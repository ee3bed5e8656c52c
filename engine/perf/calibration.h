// Calibration: the parameters that turn a GPU's peak figures into achieved ones (efficiency
// shares, latencies, host overheads), and hardware profiles: one file per hardware type
// (topologies/profiles/*.json) holding those parameters, their sources and their measured
// error. Written by `prima profile` (the machine it runs on) or fitted to published
// measurements; read by the cost model. Every field and equation: docs/cost-model.md.
// Plain values; thread-compatible.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "engine/config/json_reader.h"
#include "engine/core/status.h"

namespace prima::perf {

struct Efficiency {
  // GEMMs: compute share of peak reached at M rows is gemm_compute * M / (M + gemm_m_half);
  // weight and activation streaming reaches gemm_memory of HBM bandwidth.
  double gemm_compute = 0.75;
  double gemm_m_half = 0;
  // Wave quantization: a GEMM's output is cut into gemm_tile x gemm_tile tiles, one per SM at
  // a time; the last wave's idle SMs cost time (GpuSpec::sms; 0 = not modelled).
  double gemm_tile = 0;
  double gemm_memory = 0.85;
  // Fixed time of each GEMM kernel (ramp-up and tail that no share of peak describes): a small
  // GEMM never takes less.
  double gemm_latency_s = 0;
  // Attention. Prefill: share of the 16-bit peak at context n is attention_compute * n / (n +
  // attention_seq_half); a kernel that materialises the score matrix (not fused, not
  // FlashAttention) also moves attention_score_bytes per attended pair and head. Decode:
  // KV reads at attention_memory of HBM bandwidth.
  double attention_compute = 0.5;
  double attention_seq_half = 0;
  double attention_score_bytes = 0;
  // ALiBi models (ModelSpec::alibi): bias bytes read per attended pair and head by a kernel
  // that takes the bias as a materialized tensor (0: ALiBi applied in the kernel).
  double alibi_bias_bytes = 0;
  // Score traffic that tensor parallelism does not divide: bytes per causal pair within each
  // sequence's chunk (n(n+1)/2 for a chunk of n tokens) and model head that every rank moves
  // whatever its share of the heads. Measured engines whose prefill grows with n^2 alike at
  // TP 2, 4 and 8 show it. 0: attention fully sharded.
  double attention_unsharded_bytes = 0;
  double attention_memory = 0.75;
  double elementwise_memory = 0.6;  // norms, RoPE, activations, residuals, sampling passes
  // All-reduce, the fastest of the algorithms the profile enables (docs/cost-model.md):
  // ring (Simple protocol), ring LL (low latency), NVLS (in-switch reduction), one-shot.
  double allreduce_bandwidth = 0.8;   // ring Simple: share of link bandwidth
  double allreduce_latency_s = 8e-6;  // ring Simple: per hop
  double allreduce_base_s = 0;        // ring Simple: per collective
  double allreduce_ll_bandwidth = 0;  // ring LL: share of link bandwidth (0: not used)
  double allreduce_ll_latency_s = 0;  // ring LL: per hop
  double nvls_bandwidth = 0;          // NVLS: share of link bandwidth (0: no NVLS)
  double nvls_latency_s = 0;          // NVLS: per collective
  double oneshot_latency_s = 0;       // one-shot: per collective (used when > 0)
  double oneshot_max_bytes = 0;       // one-shot: largest buffer it takes
  double p2p_latency_s = 5e-6;        // pipeline send
  // Fixed and per-item costs of a step.
  double step_overhead_s = 1.5e-3;  // per step: scheduling, launch of the step
  double seq_overhead_s = 0;        // per sequence in the step: host work (schedule, inputs)
  double rank_overhead_s = 0;       // per step and GPU of a stage beyond the first: the host
                                    // handing the step to each TP worker
  double layer_overhead_s = 10e-6;  // per layer, GPU side (kernel gaps)
  double layer_launch_s = 0;        // per layer, host side: a layer never takes less
  double sampling_logit_s = 0;      // per sampled row and vocabulary entry (host sampling)
  // CUDA graphs: a step of at most graph_max_tokens tokens replays a captured graph, so its
  // layers pay no host launch floor and graph_layer_overhead_s of kernel gaps instead of
  // layer_overhead_s (0 tokens: the engine captures no graphs).
  double graph_max_tokens = 0;
  double graph_layer_overhead_s = 0;
};

// Which of the two axes of data owns a parameter: the hardware (what the silicon and its links
// do, fitted to microbenchmarks; topologies/profiles/) or the serving engine (what the software
// adds: host and launch costs, kernel choices, which all-reduce it uses; topologies/engines/).
enum class Axis { kHardware, kEngine };
const char* axis_name(Axis a);

// One parameter of Efficiency, by name: what the JSON key is, where the value lives, and its
// kind, which sets how it is read and what is physical.
struct EfficiencyField {
  enum Kind {
    kShare,          // in (0, 1]
    kOptionalShare,  // in [0, 1]; 0 = the feature is absent
    kSeconds,        // >= 0; JSON accepts "2ms"-style strings
    kCount,          // >= 0 (tokens, bytes)
  };
  const char* name;
  double Efficiency::*member;
  Kind kind;
  const char* what;  // one line: what it is (docs, --help, fit output)
  Axis axis;
};
std::span<const EfficiencyField> efficiency_fields();
const EfficiencyField* find_efficiency_field(const std::string& name);
// Empty when every value is physical, else the first offending key and why.
std::string check_efficiency(const Efficiency& e);

// How far a profile's predictions can be trusted: its measured error on the data it was
// calibrated against (relative errors, |predicted - measured| / measured).
struct Fidelity {
  std::string profile;           // the profile's name; "" when none applies
  std::string source;            // where its parameters come from
  bool calibrated = false;       // false: roofline only (datasheet peaks, default shares)
  std::string calibration_data;  // what the error was measured on
  int points = 0;
  double median_abs_error = -1;  // -1: not measured
  double p90_abs_error = -1;
  double max_abs_error = -1;
  std::string summary() const;  // one line for printed summaries
};

// Fills f's points, calibrated (points > 0), median, p90 and max absolute error from relative
// errors (signed or not), with report.json's percentile interpolation.
void summarize_errors(const std::vector<double>& errors, Fidelity* f);

// A hardware profile (topologies/profiles/<gpu>.json):
// {"profile": name, "description", "source", "efficiency": {...}, "fidelity": {...},
//  "gpu": {...}} — "gpu" (optional) is a topology GPU object (topologies/gpus.json's keys).
struct Profile {
  std::string name;  // GpuSpec::name it calibrates
  std::string description;
  std::string source;
  Efficiency efficiency;
  Fidelity fidelity;
  std::optional<config::Json> gpu;  // the topology GPU object, when the profile carries one
};

struct EngineProfile;  // engine_profile.h

struct Calibration {
  Efficiency defaults;
  bool has_defaults = false;                  // "defaults" given (else the built-in shares)
  std::map<std::string, Efficiency> per_gpu;  // by GpuSpec::name
  std::map<std::string, Fidelity> fidelity;   // by GpuSpec::name, from profiles
  std::string source;                         // the file, or "inline"
  bool roofline_only = false;  // "calibration": "roofline": default shares, no built-in profile
  // The serving engine (a scenario's "engine"); null: the default engine (kDefaultEngine), or
  // under roofline_only the uncalibrated one (kRooflineEngine).
  std::shared_ptr<const EngineProfile> engine;
  const Efficiency& for_gpu(const std::string& gpu) const;
};

// Either a calibration table {"defaults": {...}, "gpus": {"A100-SXM4-80GB": {...}}} or a
// profile ({"profile": ...}); any field may be omitted.
Calibration parse_calibration(const config::JsonReader& r);
Result<Calibration> load_calibration_file(const std::string& path);

Profile parse_profile(const config::JsonReader& r);
Result<Profile> load_profile_file(const std::string& path);
config::Json profile_to_json(const Profile& p);
config::Json efficiency_to_json(const Efficiency& e);  // the hardware terms
config::Json fidelity_to_json(const Fidelity& f);

// The profiles built into the binary (topologies/profiles/*.json), by GPU name; nullptr when
// there is none for that GPU.
const Profile* builtin_profile(const std::string& gpu_name);
std::vector<std::string> builtin_profile_names();

// The parameters a run uses for `gpu_name` and how far to trust them. Hardware: the
// scenario's own calibration when it names that GPU or gives defaults, else the built-in
// profile for that GPU, else the default shares ("roofline only, uncalibrated"). Engine: the
// scenario's engine (engine_profile.h) on that GPU. `efficiency` has both axes.
struct Resolved {
  Efficiency efficiency;
  Fidelity fidelity;  // the hardware profile's fit to microbenchmarks
  std::shared_ptr<const EngineProfile> engine;
};
Resolved resolve(const Calibration& scenario_calibration, const std::string& gpu_name);

}  // namespace prima::perf
