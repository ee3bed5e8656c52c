// StageCompute: the compute phase of a SimExecutor's stages, and the speed-ups that time it
// without SimGrid (private to the executor's sources; read sim_executor.h first).
//
// Reference: a stage's compute is one Exec on its lead GPU (aggregate_stage_execs) of
//   compute_s x nominal x (lead speed / slowest speed) + analytic seconds x lead speed
// flops, or one Exec per GPU. SimGrid re-times an Exec when its host's speed changes and
// fails it when the host goes off.
//
// Speed-ups, in the order they build on each other:
//   timer stage   (timer_stages) a stage with nothing but its compute (no flows follow, or
//                 lone flows may follow) is a runtime timer at since_s + remaining_flops /
//                 rate instead of an Exec: re-timed (re-time) when the lead's speed changes,
//                 failed when it goes off, as the Exec would be. Counts as an activity.
//   deferred end  (always, without a fault injector) a timer stage whose end would only move
//                 its step into the next stage's queue arms no timer (defer); the end is
//                 processed when it matters (settle): when the next stage frees, a step
//                 arrives for this stage, or a GPU changes. Same stage times.
//   chained stage (chain_stages) a timer stage whose next stage is free hands its step on at
//                 once (hand on), in the executor's own time (Replica::virtual_now = the
//                 stage's end, ahead of the clock); the next stage records free_at_s and a
//                 step arriving before then waits for it (on_free).
// The host cache (Stage::hosts_known, down, lead_speed, slowest_speed) is refreshed after a
// GPU's speed or state changes; StageCompute is the executor's HostWatcher.
//
// Thread-safety: simulation loop only. Ownership: borrows the Replica (its owner's).
#pragma once

#include "backends/sim/sim_executor_state.h"

namespace prima::sim::exec {

class StageCompute final : public HostWatcher {
 public:
  explicit StageCompute(Replica& rep) : rep_(rep) {}

  // st's compute phase at its current stage (now): an Exec (or one per GPU), or a timer.
  void start_compute(Step* st);
  // Whether st would run on `stage` as a timer and chaining is on (no flows follow there).
  bool runs_as_timer(const Stage& stage, const Step* st) const;
  // Ends a deferred stage whose end is past (as its timer would have), or arms its timer.
  void settle(Stage& stage);
  // (Re)arms the stage's timer at since_s + remaining_flops / rate.
  void arm_timer(Stage& stage);
  // Chained stages: a step waited for the stage's free_at_s; it starts now.
  void on_free(Stage& stage);
  void refresh_hosts(Stage& stage);

  void on_host_speed_change(simgrid::s4u::Host* h) override;
  void on_host_state_change(simgrid::s4u::Host* h) override;

 private:
  // flows_follow: the stage's flows start at the timer's end (no deferral, no chaining).
  void start_timer(Stage& stage, Step* st, double flops, bool flows_follow = false);
  void on_timer(Stage& stage);
  // Deferred stage ends: a timer stage whose step would, at its end, only move into the
  // next stage's queue (the next stage is busy with a step whose end is an event, and no
  // step waits for this stage) arms no timer. The end is settled when it matters: when the
  // next stage frees (the step moves on then, as it would have from the queue), when a step
  // arrives for this stage, or when a GPU's speed or state changes (everything settles).
  // The step's stage time is the same (deferred_end_s - stage start); one SimGrid event
  // less per deferred stage.
  bool can_defer(const Stage& stage) const;
  void settle_all();
  // Chained stages: whether st may leave `stage` now for the next stage (free, no waiters,
  // a timer stage for st's cost there).
  bool can_chain(const Stage& stage, const Step* st) const;
  bool can_hand_on(const Stage& stage, const Step* st, double end_s) const;
  void forget_hosts(simgrid::s4u::Host* h);

  Replica& rep_;
};

}  // namespace prima::sim::exec
