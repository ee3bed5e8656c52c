// ParallelPlan: how a model is split (tensor x pipeline parallel, micro-batches) and
// replicated, where each rank lives on the topology, and whether it fits in GPU memory.
// Plain values; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "engine/config/json_reader.h"
#include "engine/core/status.h"
#include "engine/core/types.h"
#include "engine/model/model_spec.h"
#include "engine/plan/topology.h"

namespace prima::plan {

// How replicas' stages are laid out on the GPUs (deployment.placement).
//   kPacked: replica after replica, each replica's stages on consecutive GPUs.
//   kStageMajor: stage after stage, every replica's stage s before any replica's stage s + 1,
//     so the GPUs of one stage (its layers' weights) share nodes across replicas, and the
//     sends of the replicas on a node leave through the same NIC.
enum class Placement { kPacked, kStageMajor };

// Mixture-of-experts layouts: attention data parallelism (data_parallel > 1) puts dp groups of
// tensor_parallel GPUs side by side in each stage, each group attending over its own share of
// the batch's sequences with its own KV cache; expert parallelism (expert_parallel > 1) spreads
// the routed experts over the GPUs of a stage in expert_parallel groups, each expert split over
// the tensor_parallel x data_parallel / expert_parallel GPUs of its group (expert tensor
// parallelism, 1 when expert_parallel is every GPU of the stage), with an all-to-all dispatch
// and combine around each MoE layer. Dense models keep both at 1.
struct ParallelPlan {
  int tensor_parallel = 1;
  int pipeline_parallel = 1;
  int data_parallel = 1;    // attention DP groups per stage
  int expert_parallel = 1;  // 1, or a divisor of tensor_parallel x data_parallel
  // Context parallelism over the KV cache: each sequence's KV spread over this many of a TP
  // group's GPUs instead of copied on each (where the TP ranks hold the same KV: MLA's
  // latent, or fewer KV heads than ranks). Attention runs on each GPU's share of the context
  // for its group's heads, with a query all-gather and an output reduce-scatter per layer.
  int context_parallel = 1;
  // Sequences per micro-batch when pipelining (0 = no cap). Up to pipeline_parallel
  // micro-batches are in flight at once.
  int micro_batch = 0;
  int replicas = 1;
  Placement placement = Placement::kPacked;
  int gpus_per_stage() const { return tensor_parallel * data_parallel; }
  // The GPUs each routed expert is split over: gpus_per_stage() / expert_parallel with expert
  // parallelism, else tensor_parallel (experts sharded like a dense FFN).
  int expert_tensor_parallel() const {
    return expert_parallel > 1 ? gpus_per_stage() / expert_parallel : tensor_parallel;
  }
  int gpus_per_replica() const { return gpus_per_stage() * pipeline_parallel; }
};

// Memory options (the seed's "memory_optim" plus vLLM-like knobs).
struct MemoryOptions {
  bool activation_checkpointing = false;  // accepted; no effect on inference memory
  bool cpu_offload = false;               // weights stream from host memory (slower)
  double gpu_memory_utilization = 0.9;    // share of HBM prima may use (kv_of_free: of the rest)
  // How the serving engine sizes its KV cache (perf::KvSizing): kv_of_free takes
  // gpu_memory_utilization of the memory left after weights and activations (TensorRT-LLM);
  // reserved_bytes per GPU are outside the engine's allocator (CUDA graphs, communication
  // buffers).
  bool kv_of_free = false;
  double reserved_bytes = 0;
  double kv_bytes_per_element = 2;  // fp16 KV cache; fp8 / int8: 1
  // Per GPU, on top of the model's: weights and KV bytes per token of a speculative draft
  // model (or MTP heads), set by the scenario from its "speculative" section.
  double extra_weight_bytes = 0;
  double extra_kv_bytes_per_token = 0;
};

// GPUs of one replica: devices[stage][rank]. A stage's GPUs are data_parallel groups of
// tp_group consecutive GPUs (the TP all-reduce runs within a group; place() sets it).
struct ReplicaPlacement {
  ReplicaId replica = 0;
  std::vector<std::vector<DeviceId>> devices;
  int tp_group = 0;  // 0: the whole stage is one TP group
  // The stage's GPUs exchange all-to-all: expert parallelism's dispatch and combine, context
  // parallelism's query all-gather and output reduce-scatter.
  bool all_to_all = false;
  std::vector<DeviceId> all() const;
};

// Places each stage's GPUs (tp x dp) on consecutive GPUs in the plan's order (Placement): a
// stage stays inside a node when it fits in one. Fails if the topology has too few GPUs.
Result<std::vector<ReplicaPlacement>> place(const ParallelPlan& p, const Topology& t);

// Per-GPU memory budget of a plan.
struct MemoryFit {
  bool fits = false;
  std::string verdict;      // one line: why it fits or not, with the numbers
  double hbm_bytes = 0;     // per GPU
  double usable_bytes = 0;  // hbm * gpu_memory_utilization
  double weight_bytes = 0;  // per GPU (largest stage)
  double activation_bytes = 0;
  double kv_bytes = 0;            // left for the KV cache per GPU
  double kv_bytes_per_token = 0;  // per GPU (its share of layers and KV heads)
  std::int64_t kv_tokens = 0;     // KV capacity of one replica in tokens
};

// Checks divisibility (heads and KV heads by TP, layers by PP, experts by EP), the MoE layout
// (data_parallel and expert_parallel need experts; expert_parallel is 1 or divides tp x dp;
// dp > 1 needs expert_parallel; context_parallel divides kv_copies and needs dp 1), GPU counts
// and memory. With attention DP each group holds its own
// sequences' KV: kv_tokens is dp x one group's capacity, and one sequence must fit in a group.
// KV-head rule: tp <= kv_heads needs kv_heads % tp == 0 (each rank holds kv_heads / tp heads);
// tp > kv_heads needs tp % kv_heads == 0 (each KV head is replicated on tp / kv_heads ranks).
// MLA models keep the whole latent KV on every TP rank; context_parallel spreads those copies
// tokens instead (KV per GPU / context_parallel). Errors are Status (invalid_argument for
// divisibility, failed_precondition for too few GPUs); a plan that does not fit in memory is a
// MemoryFit with fits == false and a verdict saying why.
// `max_batch_tokens` sizes the activation buffers; `min_kv_tokens` is what the KV cache must
// hold at least (one sequence of the longest context the scenario uses).
// How many TP ranks hold the same KV of a token: tp for MLA (the latent is whole on every
// rank), tp / kv_heads when there are fewer KV heads than ranks, else 1.
int kv_copies(const model::ModelSpec& m, int tp);

Result<MemoryFit> check_plan(const model::ModelSpec& m, model::Quantization q, const Topology& t,
                             const ParallelPlan& p, const MemoryOptions& mem,
                             std::int64_t max_batch_tokens, std::int64_t min_kv_tokens);

// Parses a deployment object: {"parallel_strategy": {"tensor_parallel", "pipeline_parallel",
// "data_parallel", "expert_parallel", "micro_batch"}, "memory_optim": {"activation_checkpointing",
// "cpu_offload"}, "replicas", "gpu_memory_utilization", "kv_cache_dtype": "fp16" | "fp8" | "int8"}.
// Calls r.finish(): a caller with more keys in the same object reads them before calling. Throws
// ConfigError.
void parse_deployment(const config::JsonReader& r, ParallelPlan* plan, MemoryOptions* mem);

}  // namespace prima::plan
