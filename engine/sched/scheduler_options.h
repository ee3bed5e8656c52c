// SchedulerOptions: every knob of a replica's scheduler, with defaults that give plain
// iteration-level continuous batching (FIFO, recompute preemption, no prefix cache), and the
// parser of a scenario's "scheduler" object. Plain data; parse_scheduler_options throws
// config::ConfigError (caught at the config loader's border).
#pragma once

#include <string>
#include <vector>

#include "engine/config/json_reader.h"
#include "engine/core/status.h"

namespace prima::sched {

enum class SchedulerType { kContinuous, kDynamicBatching };
enum class PreemptionMode { kRecompute, kSwap };
enum class BatchStrategy { kFillFifo, kSizeAware };
// How admission counts KV blocks (TensorRT-LLM's CapacitySchedulerPolicy names).
enum class CapacityPolicy { kMaxUtilization, kGuaranteedNoEvict };

struct SchedulerOptions {
  SchedulerType type = SchedulerType::kContinuous;
  int max_num_seqs = 256;             // running sequences at most
  int max_num_batched_tokens = 8192;  // tokens per step (the step's token budget)
  bool chunked_prefill = true;        // split prompts across steps
  int max_seqs_per_step = 0;          // micro-batch cap per step (0 = max_num_seqs)
  int block_size = 16;                // tokens per KV block
  double watermark = 0.01;            // share of KV blocks kept free at admission
  int max_step_retries = 3;           // a sequence whose steps fail this often fails
  // Prefills and decodes in one step (vLLM V1, TensorRT-LLM). false: a step runs prefill
  // work only, when any can run, else decodes only (SGLang without --enable-mixed-chunk).
  bool mixed_batches = true;
  // The next step is formed while the current one runs (SGLang's overlap scheduler): a request
  // that arrives after a step started joins the step after the next. Off when nothing runs.
  bool overlap_schedule = false;

  // Priorities and SLA: waiting queue ordered by class, then deadline (arrival + sla_s).
  bool priority_scheduling = false;
  double reserved_high_share = 0.1;  // of max_num_seqs and KV blocks, high class only
  PreemptionMode preemption_mode = PreemptionMode::kRecompute;
  // max_utilization (vLLM, SGLang): a request is admitted when the blocks of its next chunk are
  // free; a running sequence that cannot grow preempts the newest. guaranteed_no_evict
  // (TensorRT-LLM's default): a request is admitted only when the blocks of its whole prompt
  // and max_output_tokens fit beside the blocks every running sequence still needs to reach
  // its own, so a started request is never preempted.
  CapacityPolicy capacity_policy = CapacityPolicy::kMaxUtilization;
  int swap_space_blocks = 0;      // host blocks for swapped-out KV (0 = unlimited)
  double kv_bytes_per_token = 0;  // KV bytes per token per GPU (set by the wiring; 0 = free)

  // Long prompts: their own queue and share of the step's token budget.
  bool long_prompt_queue = false;
  int long_prompt_threshold = 512;         // prompts longer than this are long
  double long_prompt_budget_share = 0.25;  // of max_num_batched_tokens while short work waits

  // Prefill/decode budgets within a step (0 = unlimited).
  int max_prefill_tokens_per_step = 0;
  int max_decode_seqs_per_step = 0;

  // Dynamic (request-level) batching, type kDynamicBatching.
  int max_batch_size = 64;
  std::vector<int> preferred_batch_sizes;  // Triton's preferred_batch_size
  double batch_timeout_s = 0;              // timeout_ms / max_queue_delay_microseconds
  std::vector<BatchStrategy> strategies = {BatchStrategy::kFillFifo};  // applied in order

  // Speculative decoding ("speculative" in a scenario): each decoding sequence verifies up to
  // speculative_tokens draft tokens per step (fewer near its max_output_tokens or the step's
  // token budget); each is accepted with probability acceptance_rate, independently, until
  // the first rejection (unless the executor reports StepResult::accepted). Draws are a hash
  // of (acceptance_seed, request, position): the same for every schedule. 0: off.
  int speculative_tokens = 0;
  double acceptance_rate = 0;
  std::uint64_t acceptance_seed = 1;

  // KV cache.
  bool enable_prefix_caching = false;
  int compact_every_requests = 0;  // compact() after every N finished requests (0 = off)

  Status validate() const;
};

const char* preemption_mode_name(PreemptionMode m);
const char* capacity_policy_name(CapacityPolicy p);

// Reads a scenario's "scheduler" object into *o (keys absent keep o's values). Reads every
// key the object may hold except max_model_len (consumed, read by the scenario loader), then
// finish()es: unknown keys, unknown policy names, negative limits, shares out of range are
// ConfigErrors naming the file and JSON path.
void parse_scheduler_options(const config::JsonReader& r, SchedulerOptions* o);

}  // namespace prima::sched
