// Replica: one copy of the model on its GPUs (TP x PP), with its own scheduler and KV cache,
// driving its Executor one step after another (up to max_inflight steps at once when
// pipelining). Arrivals at the same instant are coalesced into one scheduling pass.
// Health checks pause a failed replica (no new steps) and take its sequences out (take_all);
// load migration moves its not-yet-started sequences (movable, cancel) to other replicas.
// Not thread-safe (engine loop only). Owns its Scheduler and BlockManager; borrows the
// Runtime, the Executor and the sequences.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "engine/kv/block_manager.h"
#include "engine/runtime.h"
#include "engine/sched/scheduler.h"

namespace prima::cluster {

struct ReplicaEvents {
  // The sequences that produced a token in a step, in step order (one call per step, not per
  // token: this runs for every token of a simulation).
  std::function<void(const std::vector<Sequence*>&)> on_tokens;
  std::function<void(Sequence*)> on_finished;  // reached its output length
  std::function<void(Sequence*)> on_failed;    // gave up (reason in Sequence::reason)
  // Every finished step (ok or not), for utilization metrics.
  std::function<void(ReplicaId, const sched::ScheduledStep&, const StepResult&)> on_step;
};

class Replica {
 public:
  Replica(ReplicaId id, int gpus, Runtime* rt, Executor* exec, sched::SchedulerOptions opts,
          int num_kv_blocks, const ReplicaEvents* events);

  ReplicaId id() const { return id_; }
  int gpus() const { return gpus_; }
  // Whether a sequence of this size could ever be held in this replica's KV cache.
  bool can_ever_fit(const Sequence& s) const;
  void submit(Sequence* s);
  bool cancel(Sequence* s);

  // Token footprint (prompt + max output) of the sequences assigned and not yet finished.
  std::int64_t outstanding_tokens() const { return outstanding_tokens_; }
  int num_waiting() const { return static_cast<int>(sched_.num_waiting()); }
  int num_running() const { return static_cast<int>(sched_.num_running()); }
  int inflight_steps() const { return inflight_; }
  bool idle() const {
    return inflight_ == 0 && sched_.num_waiting() == 0 && sched_.num_running() == 0;
  }
  // Health checks: a paused replica launches no new step (the ones in flight finish).
  void pause() { paused_ = true; }
  void resume();
  bool paused() const { return paused_; }
  // The engine ends every sequence at once (ServingEngine::fail_all): the replica launches
  // nothing more, and a step still in flight is dropped when it ends (its sequences are gone).
  void abandon() {
    paused_ = true;
    abandoned_ = true;
  }
  // Takes every sequence out (waiting, running, swapped); none may be in a step in flight.
  // Their KV blocks are released and their progress reset (num_computed = 0: they are
  // prefilled again wherever they go). Returns them in (running, waiting, long-waiting) order.
  std::vector<Sequence*> take_all();
  // Tokens of work left: prompt (or recompute) tokens to prefill plus outputs to generate.
  std::int64_t work_left_tokens() const;
  // Waiting sequences that hold nothing here (no KV, not swapped, not in flight, nothing
  // computed): load migration may move them (cancel + another replica's submit). Queue order.
  std::vector<Sequence*> movable() const;
  const kv::BlockManager& kv() const { return kv_; }
  void set_kv_tiers(std::shared_ptr<kv::KvTiers> tiers) { kv_.set_tiers(std::move(tiers)); }
  const sched::Scheduler& scheduler() const { return sched_; }
  std::int64_t steps() const { return steps_; }

 private:
  void request_kick();
  void arm_wakeup();
  void kick();
  void on_step_done(sched::ScheduledStep* step, const StepResult& r);

  ReplicaId id_;
  int gpus_;
  Runtime* rt_;
  Executor* exec_;
  kv::BlockManager kv_;
  sched::Scheduler sched_;
  const ReplicaEvents* events_;
  int inflight_ = 0;
  bool kick_pending_ = false;
  bool paused_ = false;
  bool abandoned_ = false;
  TimerId wakeup_ = kNoTimer;  // dynamic batching: batch timeout
  Time wakeup_at_ = 0;
  std::int64_t outstanding_tokens_ = 0;
  std::int64_t steps_ = 0;
  // Steps in flight are owned by all_steps_; finished ones are reused (no allocation per step).
  std::vector<std::unique_ptr<sched::ScheduledStep>> all_steps_;
  std::vector<sched::ScheduledStep*> free_steps_;
  sched::StepOutcome outcome_;  // reused by on_step_done (used before it kicks again)
};

}  // namespace prima::cluster
