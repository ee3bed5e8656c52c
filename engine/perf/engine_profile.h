// Engine profiles: what a serving engine adds to the hardware it runs on. The cost model's
// parameters come from two axes of data (calibration.h, Axis): a hardware profile per GPU type
// (topologies/profiles/) fitted to microbenchmarks, and an engine profile per serving engine
// and mode (topologies/engines/): host overhead per step and per sequence, kernel launches per
// layer and the steps CUDA graphs cover, the attention kernel's extra traffic, which all-reduce
// it uses, its scheduler defaults and how it sizes the KV cache, with its error on published
// measurements of that engine, cross-validated by source (engine/calib/). The same hardware
// profile serves every engine. Formats: docs/cost-model.md, "Engine profiles". Plain values;
// thread-compatible.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/config/json_reader.h"
#include "engine/core/status.h"
#include "engine/perf/calibration.h"

namespace prima::perf {

// The engine's scheduler defaults: what a scenario's "scheduler" starts from.
struct EngineScheduler {
  int max_num_seqs = 256;
  int max_num_batched_tokens = 8192;
  bool chunked_prefill = true;
  bool mixed_batches = true;      // prefills and decodes share a step (false: SGLang's default)
  bool overlap_schedule = false;  // the next step formed while one runs (SGLang's default)
  // Full prompt blocks stay cached after their request leaves (vLLM V1's prefix caching,
  // SGLang's radix cache): shared prefixes, and a preempted request's own recompute, reuse them.
  bool prefix_caching = false;
  // Admission reserves each request's whole footprint, prompt and max_output_tokens, and never
  // preempts (TensorRT-LLM's GUARANTEED_NO_EVICT); false: vLLM's admit-then-preempt.
  bool guaranteed_no_evict = false;
};

// How the engine sizes its KV cache on each GPU: it takes memory_utilization of the GPU's
// memory (vLLM's gpu_memory_utilization, SGLang's mem_fraction_static) or, of_free, of the
// memory left after weights and activations (TensorRT-LLM's kv_cache_free_gpu_mem_fraction);
// reserved_bytes per GPU are outside it (CUDA graphs, NCCL and custom all-reduce buffers).
struct KvSizing {
  double memory_utilization = 0.9;
  bool of_free = false;
  double reserved_bytes = 0;
};

// An error summary over a set of points (relative errors).
struct ErrorSummary {
  int points = 0;
  double median_abs_error = -1;  // -1: no point
  double max_abs_error = -1;
};

// How far an engine's predictions on one GPU type can be trusted: the error of predictions on
// sources the fit did not see (leave one source out), overall and per metric (ttft, tpot, e2e,
// throughput), beside the fit's error on its own points (in-sample), and the range its points
// cover.
struct EngineFidelity {
  std::vector<std::string> sources;
  ErrorSummary out_of_sample;
  std::map<std::string, ErrorSummary> out_of_sample_by_metric;
  ErrorSummary in_sample;
  // The calibrated range: model size (billions of parameters), TP, batch and context.
  double min_params_b = 0, max_params_b = 0;
  int min_tp = 0, max_tp = 0;
  int max_batch = 0, max_context = 0;
};

struct EngineProfile {
  std::string name;  // "vllm", "trtllm", ...
  std::string description;
  std::string source;
  Efficiency terms;                           // its engine-axis fields (others unused)
  std::map<std::string, Efficiency> per_gpu;  // terms fitted for one GPU type, by GpuSpec::name
  EngineScheduler scheduler;
  // Defaults the engine picks by GPU type (vLLM's batch limits by device), by GpuSpec::name.
  std::map<std::string, EngineScheduler> scheduler_per_gpu;
  KvSizing kv;
  std::map<std::string, EngineFidelity> fidelity;  // by GpuSpec::name

  // The engine's terms on `gpu` (its own fit when it has one).
  const Efficiency& terms_for(const std::string& gpu) const;
  // The engine's scheduler defaults on `gpu`.
  const EngineScheduler& scheduler_for(const std::string& gpu) const;
};

// `hardware` with the engine-axis fields of `engine` on `gpu`.
Efficiency merge_axes(const Efficiency& hardware, const EngineProfile& engine,
                      const std::string& gpu);

// Reads an engine profile. A hardware term in it is an error saying which axis owns it; a
// missing name or a non-physical term is an error naming the file and key. `base` (for
// "base": NAME) starts from a built-in profile.
EngineProfile parse_engine_profile(const config::JsonReader& r);
Result<EngineProfile> load_engine_profile_file(const std::string& path);
config::Json engine_profile_to_json(const EngineProfile& e);
config::Json engine_fidelity_to_json(const EngineFidelity& f);

// What a run is: model size, TP degree, batch and context, to compare with the calibrated
// range of its engine on its GPU.
struct RunFacts {
  double params_b = 0;
  int tensor_parallel = 0;
  int max_batch = 0;
  int max_context = 0;
};

// The "fidelity" section of report.json and plan.json for one GPU type: the engine, the
// out-of-sample error of that engine on that GPU (median_abs_error, max_abs_error, points,
// per metric; "calibrated": true when the engine has been measured there), the in-sample fit
// labelled as such, the hardware profile's error on its microbenchmarks, and (with facts) how
// far the run is outside the calibrated range. "summary" says it in one line.
config::Json trust_json(const Resolved& r, const std::string& gpu, const RunFacts* facts);

// The engines built into the binary (topologies/engines/*.json), by name; null when unknown.
const EngineProfile* builtin_engine(const std::string& name);
std::vector<std::string> builtin_engine_names();
// The engine a scenario runs when it names none.
inline constexpr const char* kDefaultEngine = "vllm";
// The engine of "calibration": "roofline": the cost model's default terms, uncalibrated.
inline constexpr const char* kRooflineEngine = "generic";

// A scenario's "engine": a built-in name, a path to an engine profile file (relative to
// base_dir), or an inline profile object (optionally {"base": NAME, ...}). Errors name `r`'s
// file and the key; an unknown name lists the known ones.
EngineProfile resolve_engine(const config::JsonReader& r, const std::string& key,
                             const std::string& base_dir);

}  // namespace prima::perf
