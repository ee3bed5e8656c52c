// Scheduler: iteration-level continuous batching for one replica (Orca / vLLM style), with
// optional serving policies (SchedulerOptions; the defaults are plain FIFO continuous batching).
//
// Each call to schedule() forms the next step: running sequences first (decode tokens and
// the rest of chunked prefills), then waiting sequences in queue order while the token budget
// (max_num_batched_tokens), the sequence limit (max_num_seqs) and free KV blocks allow. With
// chunked prefill a long prompt is split across steps so decodes keep flowing. When a running
// sequence cannot grow its KV blocks, the most recently admitted sequence is preempted by
// recompute (its blocks freed, its progress reset, back to the head of the queue).
// Sequences of steps still on the devices (pipeline parallelism: several steps in flight) are
// skipped.
//
// Policies:
//  - priority_scheduling: the queue is ordered by class (high, normal, low), then deadline
//    (arrival + sla_s; no SLA: arrival + kNoSlaDeadline_s), then arrival, then id. A share of
//    the sequence slots and KV blocks (reserved_high_share) is kept for the high class; a high
//    request that cannot be admitted preempts lower classes (lowest class, newest first).
//  - preemption_mode swap: a preempted sequence keeps its progress; its KV blocks go to host
//    memory (swap_space_blocks) and come back when it resumes; the step carries the bytes
//    (BatchShape::swap_out_bytes / swap_in_bytes).
//  - long_prompt_queue: prompts over long_prompt_threshold wait in their own queue, are
//    admitted after short ones and their prefill gets at most long_prompt_budget_share of the
//    step's tokens while short work is waiting or prefilling (work-conserving otherwise).
//  - max_prefill_tokens_per_step / max_decode_seqs_per_step: separate prefill/decode budgets.
//  - type dynamic_batching: request-level batching; a batch forms when max_batch_size (or a
//    preferred size) requests wait or the oldest waited batch_timeout_s, and runs to
//    completion: nothing is admitted until every sequence of the batch finished. schedule()
//    is empty while the batch fills; next_wakeup() says when the timeout expires.
//  - capacity_policy guaranteed_no_evict: a request is admitted only when its whole footprint
//    (prompt and max_output_tokens) fits beside what the running sequences still need to
//    finish; running sequences then never preempt (TensorRT-LLM's default capacity scheduler).
//  - enable_prefix_caching: admission shares cached prefix blocks (BlockManager).
//  - compact_every_requests: BlockManager::compact() after every N finished requests.
// A deterministic state machine: same calls, same decisions.
// Not thread-safe (engine loop only). Does not own the sequences or the BlockManager.
#pragma once

#include <deque>
#include <limits>
#include <vector>

#include "engine/core/request.h"
#include "engine/core/status.h"
#include "engine/kv/block_manager.h"
#include "engine/runtime.h"
#include "engine/sched/scheduler_options.h"

namespace prima::sched {

struct ScheduledStep {
  StepBatch batch;
  std::vector<Sequence*> seqs;  // parallel to batch.seqs
  int preempted = 0;            // sequences preempted to make room for this step
  bool in_rank_order =
      true;  // seqs sorted by run rank (false once pass 1 of the long-prompt queue added some)
  bool empty() const { return seqs.empty(); }
  // Empties the step, keeping the vectors' storage for reuse.
  void clear() {
    batch.replica = 0;
    batch.step_id = 0;
    batch.seqs.clear();
    batch.shape = BatchShape{};
    seqs.clear();
    preempted = 0;
    in_rank_order = true;
  }
};

// What one finished step did to its sequences.
struct StepOutcome {
  std::vector<Sequence*> produced_token;  // sampled a token this step
  std::vector<Sequence*> finished;        // reached their output length (blocks released)
  std::vector<Sequence*> failed;          // exhausted their step retries (blocks released)
  void clear() {
    produced_token.clear();
    finished.clear();
    failed.clear();
  }
};

class Scheduler {
 public:
  static constexpr Time kNever = std::numeric_limits<Time>::infinity();
  static constexpr double kNoSlaDeadline_s = 1e9;  // deadline offset of requests without SLA

  // Sets kv's prefix caching from opts.enable_prefix_caching.
  Scheduler(SchedulerOptions opts, kv::BlockManager* kv);

  const SchedulerOptions& options() const { return opts_; }
  // Whether `s` can ever be admitted on this replica under these options: its whole KV
  // footprint fits above the watermark; without chunked prefill its prompt fits the step's
  // token budget; with priority scheduling a non-high sequence's first chunk fits outside the
  // high-class reserve. (Replica::can_ever_fit should call this.)
  bool can_ever_fit(const Sequence& s) const;
  // Queues a sequence (waiting). The caller checked that it can ever fit.
  void add(Sequence* seq);
  // Forms the next step; empty when nothing can run now.
  ScheduledStep schedule(Time now);
  // The same into *out (cleared first; its storage is reused: no allocation once warm).
  void schedule(Time now, ScheduledStep* out);
  // Applies a finished step. A failed step resets its sequences for recompute.
  StepOutcome complete(const ScheduledStep& step, const StepResult& result, Time now);
  // The same into *out (cleared first; storage reused).
  void complete(const ScheduledStep& step, const StepResult& result, Time now, StepOutcome* out);
  // Removes a sequence wherever it is (cancel); releases its blocks. False if not found.
  bool remove(Sequence* seq);

  // Dynamic batching: when the oldest waiting request's timeout expires while no batch runs
  // (the replica should call schedule() then); kNever when no timer is needed.
  Time next_wakeup() const;

  // Waiting includes the long-prompt queue and swapped-out sequences.
  std::size_t num_waiting() const { return waiting_.size() + long_waiting_.size(); }
  std::size_t num_running() const { return running_.size(); }
  std::int64_t total_preemptions() const { return preemptions_; }
  // Tokens held in KV by running sequences, a shared prefix block counted once (for
  // fragmentation metrics: kv.internal_fragmentation(tokens_in_kv())).
  std::int64_t tokens_in_kv() const;
  // KV utilization: tokens held / token capacity of the cache (usage() counts blocks).
  double kv_token_utilization() const;
  std::int64_t swap_outs() const { return swap_outs_; }
  std::int64_t swap_ins() const { return swap_ins_; }
  std::int64_t priority_preemptions() const { return priority_preemptions_; }
  int swapped_blocks() const { return swapped_blocks_; }  // host blocks in use
  std::int64_t batches_formed() const { return batches_formed_; }
  std::int64_t finished_requests() const { return finished_; }
  // The (short) waiting queue in order, and the long-prompt queue.
  const std::deque<Sequence*>& waiting() const { return waiting_; }
  const std::deque<Sequence*>& long_waiting() const { return long_waiting_; }
  const std::vector<Sequence*>& running() const { return running_; }

 private:
  enum class Admit { kOk, kNoBudget, kNoSeat, kNoBlocks };
  struct Budget;

  void preempt(Sequence* victim, ScheduledStep* step);
  Sequence* pick_victim(const std::vector<Sequence*>& batch, Sequence* requester);
  Sequence* pick_priority_victim(Priority requester) const;
  void make_room_for_high(ScheduledStep* step);
  void enqueue(Sequence* s, bool front);  // waiting queue by policy
  bool is_long(const Sequence* s) const;
  bool before(const Sequence* a, const Sequence* b) const;  // priority order
  // Blocks `s` still lacks to hold its prompt and max_output_tokens (guaranteed_no_evict).
  int blocks_to_finish(const Sequence& s) const;
  Admit try_admit(Sequence* s, Budget& b, int cap, ScheduledStep* step, Time now);
  void run_running(Budget& b, int pass, ScheduledStep* step, Time now);
  // running_ and ready_ bookkeeping: admission (a new rank), leaving ready_ (preemption,
  // removal), and a finished step's sequences that keep running, merged back by rank.
  void enter_running(Sequence* s);
  void leave_ready(Sequence* s);
  // `in_rank_order`: back is known to be sorted by rank (no check needed).
  void back_to_ready(std::vector<Sequence*>& back, bool in_rank_order);
  // draft: speculative draft tokens verified with the sequence's next token (n = 1 + draft).
  void add_work(Sequence* s, int n, Budget& b, ScheduledStep* step, Time now, int draft = 0);
  // Draft tokens of step sequence i accepted: the executor's count, else drawn (options).
  int accepted_drafts(const Sequence& s, const StepResult& r, std::size_t i) const;
  // Keeps a step's prompt log-probabilities (StepResult::prompt_logprobs) by position.
  static void record_prompt_logprobs(Sequence* s, const std::vector<TokenLogprobs>& lps);
  void admit_queue(std::deque<Sequence*>& q, Budget& b, bool long_q, ScheduledStep* step, Time now);
  int batch_ready(Time now) const;  // dynamic batching: size of the batch to form now (0: wait)
  void form_batch(int n);
  double bytes_of(int blocks) const;
  void on_finished();

  SchedulerOptions opts_;
  kv::BlockManager* kv_;
  std::deque<Sequence*> waiting_;
  std::deque<Sequence*> long_waiting_;  // long_prompt_queue only
  std::vector<Sequence*> running_;      // admission order
  // running_ minus the sequences on the devices (in_flight), in the same order (run_rank):
  // what a step can take, without walking the sequences of the steps in flight.
  std::vector<Sequence*> ready_;
  // Inside run_running's walk over ready_: a preempted sequence stays in ready_ (its running
  // flag false) until the walk's end, which drops it with the scheduled ones.
  bool walking_ready_ = false;
  std::uint64_t run_ranks_ = 0;  // ranks given so far
  std::uint64_t next_step_ = 1;
  std::int64_t preemptions_ = 0;
  std::int64_t priority_preemptions_ = 0;
  std::int64_t swap_outs_ = 0, swap_ins_ = 0;
  int swapped_blocks_ = 0;
  int running_high_ = 0;  // running sequences of the high class
  std::int64_t batches_formed_ = 0;
  std::int64_t finished_ = 0;
  Time last_formed_s_ = -kNever;  // when the last non-empty step was formed (overlap_schedule)
  std::vector<Sequence*> batch_scratch_;
  std::vector<Time> decode_scratch_;
  std::vector<Sequence*> ready_scratch_;
  std::vector<Sequence*> back_scratch_;
};

}  // namespace prima::sched
