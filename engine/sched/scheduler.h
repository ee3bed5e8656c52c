// Scheduler: iteration-level continuous batching for one replica (Orca / vLLM style).
//
// Each call to schedule() forms the next step: running sequences first (decode tokens and
// the rest of chunked prefills), then waiting sequences in queue order while the token budget
// (max_num_batched_tokens), the sequence limit (max_num_seqs) and free KV blocks allow. With
// chunked prefill a long prompt is split across steps so decodes keep flowing. When a running
// sequence cannot grow its KV blocks, the most recently admitted sequence is preempted by
// recompute (its blocks freed, its progress reset, back to the head of the queue).
// Sequences of steps still on the devices (pipeline parallelism: several steps in flight) are
// skipped. A const-free, deterministic state machine: same calls, same decisions.
// Not thread-safe (engine loop only). Does not own the sequences or the BlockManager.
#pragma once

#include <deque>
#include <vector>

#include "engine/core/request.h"
#include "engine/core/status.h"
#include "engine/kv/block_manager.h"
#include "engine/runtime.h"

namespace prima::sched {

struct SchedulerOptions {
  int max_num_seqs = 256;             // running sequences at most
  int max_num_batched_tokens = 8192;  // tokens per step (the step's token budget)
  bool chunked_prefill = true;        // split prompts across steps
  int max_seqs_per_step = 0;          // micro-batch cap per step (0 = max_num_seqs)
  int block_size = 16;                // tokens per KV block
  double watermark = 0.01;            // share of KV blocks kept free at admission
  int max_step_retries = 3;           // a sequence whose steps fail this often fails
  Status validate() const;
};

struct ScheduledStep {
  StepPlan plan;
  std::vector<Sequence*> seqs;  // parallel to plan.seqs
  int preempted = 0;            // sequences preempted to make room for this step
  bool empty() const { return seqs.empty(); }
  // Empties the step, keeping the vectors' storage for reuse.
  void clear() {
    plan.replica = 0;
    plan.step_id = 0;
    plan.seqs.clear();
    plan.shape = BatchShape{};
    seqs.clear();
    preempted = 0;
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
  Scheduler(SchedulerOptions opts, kv::BlockManager* kv);

  const SchedulerOptions& options() const { return opts_; }
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

  std::size_t num_waiting() const { return waiting_.size(); }
  std::size_t num_running() const { return running_.size(); }
  std::int64_t total_preemptions() const { return preemptions_; }
  // Tokens held in KV by running sequences (for fragmentation metrics).
  std::int64_t tokens_in_kv() const;
  const std::deque<Sequence*>& waiting() const { return waiting_; }
  const std::vector<Sequence*>& running() const { return running_; }

 private:
  void preempt(Sequence* victim);
  Sequence* pick_victim(const std::vector<Sequence*>& batch, Sequence* requester);

  SchedulerOptions opts_;
  kv::BlockManager* kv_;
  std::deque<Sequence*> waiting_;
  std::vector<Sequence*> running_;  // admission order
  std::uint64_t next_step_ = 1;
  std::int64_t preemptions_ = 0;
};

}  // namespace prima::sched
