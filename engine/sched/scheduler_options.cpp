#include "engine/sched/scheduler_options.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace prima::sched {

const char* preemption_mode_name(PreemptionMode m) {
  return m == PreemptionMode::kSwap ? "swap" : "recompute";
}

const char* capacity_policy_name(CapacityPolicy p) {
  return p == CapacityPolicy::kGuaranteedNoEvict ? "guaranteed_no_evict" : "max_utilization";
}

Status SchedulerOptions::validate() const {
  if (max_num_seqs <= 0) return invalid_argument("max_num_seqs must be > 0");
  if (max_num_batched_tokens <= 0) return invalid_argument("max_num_batched_tokens must be > 0");
  if (max_seqs_per_step < 0) return invalid_argument("max_seqs_per_step must be >= 0");
  if (block_size <= 0) return invalid_argument("block_size must be > 0");
  if (watermark < 0 || watermark >= 1) return invalid_argument("watermark must be in [0, 1)");
  if (max_step_retries < 0) return invalid_argument("max_step_retries must be >= 0");
  if (reserved_high_share < 0 || reserved_high_share >= 1)
    return invalid_argument("reserved_high_share must be in [0, 1)");
  if (swap_space_blocks < 0) return invalid_argument("swap_space_blocks must be >= 0");
  if (kv_bytes_per_token < 0) return invalid_argument("kv_bytes_per_token must be >= 0");
  if (long_prompt_threshold <= 0) return invalid_argument("long_prompt_threshold must be > 0");
  if (long_prompt_budget_share <= 0 || long_prompt_budget_share > 1)
    return invalid_argument("long_prompt_budget_share must be in (0, 1]");
  if (max_prefill_tokens_per_step < 0)
    return invalid_argument("max_prefill_tokens_per_step must be >= 0");
  if (max_decode_seqs_per_step < 0)
    return invalid_argument("max_decode_seqs_per_step must be >= 0");
  if (max_batch_size <= 0) return invalid_argument("max_batch_size must be > 0");
  for (int p : preferred_batch_sizes)
    if (p <= 0 || p > max_batch_size)
      return invalid_argument("preferred_batch_size entries must be in [1, max_batch_size]");
  if (batch_timeout_s < 0) return invalid_argument("batch timeout must be >= 0");
  if (strategies.empty()) return invalid_argument("strategy must name at least one strategy");
  if (compact_every_requests < 0) return invalid_argument("compact_every_requests must be >= 0");
  if (type == SchedulerType::kDynamicBatching) {
    // Request-level batches take requests in arrival/length order, whole.
    if (priority_scheduling)
      return invalid_argument("priority_scheduling needs type continuous, not dynamic_batching");
    if (long_prompt_queue)
      return invalid_argument("long_prompt_queue needs type continuous, not dynamic_batching");
  }
  return ok_status();
}

namespace {

int to_int(std::int64_t v) {
  return static_cast<int>(std::min<std::int64_t>(v, 1 << 30));
}

void parse_strategies(const config::JsonReader& r, SchedulerOptions* o) {
  struct Entry {
    std::int64_t priority;
    std::size_t index;
    BatchStrategy s;
  };
  std::vector<Entry> entries;
  const auto list = r.objects("strategy");
  if (list.empty()) r.fail("strategy", "expected at least one {\"name\": ..., \"priority\": N}");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const auto& e = list[i];
    const std::string name = e.one_of("name", {"fill_fifo", "size_aware"});
    const BatchStrategy s =
        name == "size_aware" ? BatchStrategy::kSizeAware : BatchStrategy::kFillFifo;
    const std::int64_t prio = e.non_negative_integer("priority", std::int64_t(i + 1));
    e.finish();
    for (const auto& prev : entries)
      if (prev.s == s) e.fail("name", "strategy \"" + name + "\" is listed twice");
    entries.push_back({prio, i, s});
  }
  // Lower priority numbers are applied first; ties keep the listed order.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.priority < b.priority; });
  o->strategies.clear();
  for (const auto& e : entries) o->strategies.push_back(e.s);
}

}  // namespace

void parse_scheduler_options(const config::JsonReader& r, SchedulerOptions* o) {
  const std::string type = r.one_of("type", {"continuous", "dynamic_batching"}, "continuous");
  o->type =
      type == "dynamic_batching" ? SchedulerType::kDynamicBatching : SchedulerType::kContinuous;
  o->max_num_seqs = to_int(r.positive_integer("max_num_seqs", o->max_num_seqs));
  o->max_num_batched_tokens =
      to_int(r.positive_integer("max_num_batched_tokens", o->max_num_batched_tokens));
  o->chunked_prefill = r.boolean("chunked_prefill", o->chunked_prefill);
  o->mixed_batches = r.boolean("mixed_batches", o->mixed_batches);
  o->overlap_schedule = r.boolean("overlap_schedule", o->overlap_schedule);
  o->block_size = to_int(r.positive_integer("block_size", o->block_size));
  o->watermark = r.fraction("watermark", o->watermark);
  if (o->watermark >= 1) r.fail("watermark", "expected a number in [0, 1)");
  o->max_step_retries = to_int(r.non_negative_integer("max_step_retries", o->max_step_retries));

  o->priority_scheduling = r.boolean("priority_scheduling", o->priority_scheduling);
  o->reserved_high_share = r.fraction("reserved_high_share", o->reserved_high_share);
  if (o->reserved_high_share >= 1) r.fail("reserved_high_share", "expected a number in [0, 1)");
  const std::string mode =
      r.one_of("preemption_mode", {"recompute", "swap"}, preemption_mode_name(o->preemption_mode));
  o->preemption_mode = mode == "swap" ? PreemptionMode::kSwap : PreemptionMode::kRecompute;
  const std::string capacity =
      r.one_of("capacity_policy", {"max_utilization", "guaranteed_no_evict"},
               capacity_policy_name(o->capacity_policy));
  o->capacity_policy = capacity == "guaranteed_no_evict" ? CapacityPolicy::kGuaranteedNoEvict
                                                         : CapacityPolicy::kMaxUtilization;
  o->swap_space_blocks = to_int(r.non_negative_integer("swap_space_blocks", o->swap_space_blocks));

  o->long_prompt_queue = r.boolean("long_prompt_queue", o->long_prompt_queue);
  o->long_prompt_threshold =
      to_int(r.positive_integer("long_prompt_threshold", o->long_prompt_threshold));
  o->long_prompt_budget_share = r.fraction("long_prompt_budget_share", o->long_prompt_budget_share);
  if (o->long_prompt_budget_share <= 0)
    r.fail("long_prompt_budget_share", "expected a number in (0, 1]");

  o->max_prefill_tokens_per_step =
      to_int(r.non_negative_integer("max_prefill_tokens_per_step", o->max_prefill_tokens_per_step));
  o->max_decode_seqs_per_step =
      to_int(r.non_negative_integer("max_decode_seqs_per_step", o->max_decode_seqs_per_step));

  // Dynamic batching keys: only with type dynamic_batching.
  const bool dynamic = o->type == SchedulerType::kDynamicBatching;
  for (const char* k : {"max_batch_size", "timeout_ms", "max_queue_delay_microseconds",
                        "preferred_batch_size", "strategy"})
    if (!dynamic && r.has(k)) r.fail(k, "only valid with \"type\": \"dynamic_batching\"");
  o->max_batch_size = to_int(r.positive_integer("max_batch_size", o->max_batch_size));
  if (r.has("timeout_ms") && r.has("max_queue_delay_microseconds"))
    r.fail("max_queue_delay_microseconds",
           "give either timeout_ms or max_queue_delay_microseconds, not both");
  if (r.has("timeout_ms")) o->batch_timeout_s = r.non_negative_number("timeout_ms", 0) * 1e-3;
  if (r.has("max_queue_delay_microseconds"))
    o->batch_timeout_s = r.non_negative_number("max_queue_delay_microseconds", 0) * 1e-6;
  if (r.has("preferred_batch_size")) {
    o->preferred_batch_sizes.clear();
    for (double v : r.numbers("preferred_batch_size")) {
      if (v < 1 || v != std::floor(v) || v > o->max_batch_size)
        r.fail("preferred_batch_size", "expected positive integers <= max_batch_size (" +
                                           std::to_string(o->max_batch_size) + "), got " +
                                           config::describe(config::Json(v)));
      o->preferred_batch_sizes.push_back(static_cast<int>(v));
    }
    std::sort(o->preferred_batch_sizes.begin(), o->preferred_batch_sizes.end());
  }
  if (r.has("strategy")) parse_strategies(r, o);

  o->enable_prefix_caching = r.boolean("enable_prefix_caching", o->enable_prefix_caching);
  o->compact_every_requests =
      to_int(r.non_negative_integer("compact_every_requests", o->compact_every_requests));

  r.consume("max_model_len");  // read by the scenario loader
  r.finish();
  if (dynamic && o->priority_scheduling)
    r.fail("priority_scheduling", "only valid with \"type\": \"continuous\"");
  if (dynamic && o->long_prompt_queue)
    r.fail("long_prompt_queue", "only valid with \"type\": \"continuous\"");
}

}  // namespace prima::sched
