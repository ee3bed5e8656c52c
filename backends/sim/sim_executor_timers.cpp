// SimExecutor's timer stages (SimSpeedups::timer_stages): a stage left with only its compute
// runs as a runtime timer on the lead GPU's speed; chained stages (chain_stages) hand a step
// on in the executor's own time; deferred ends arm no timer until they matter; and the host
// watchers that re-time or fail these timers when a GPU's speed or state changes. See
// sim_executor.h. Thread-safety: simulation loop only, like the rest of the executor.
#include <algorithm>
#include <limits>
#include <simgrid/s4u.hpp>

#include "backends/sim/sim_executor.h"
#include "backends/sim/sim_executor_step.h"

namespace sg4 = simgrid::s4u;

namespace prima::sim {

void SimExecutor::start_timer(Stage& stage, Step* st, double flops, bool flows_follow) {
  ++activities_started_;
  stage.timed = st;
  stage.remaining_flops = flops;
  stage.rate = stage.lead_speed;  // fresh: start_compute refreshed it
  stage.since_s = now();
  if (flows_follow) {  // its end is an event: the flows start then
    arm_timer(stage);
    return;
  }
  if (can_defer(stage)) {
    stage.deferred = true;
    stage.deferred_end_s = stage.since_s + stage.remaining_flops / stage.rate;
    return;
  }
  if (can_chain(stage, st)) {
    // The stage's end as its timer would give it; the step moves on in that time.
    const double end = stage.since_s + stage.remaining_flops / stage.rate;
    stage.timed = nullptr;
    const double saved = virtual_now_;
    virtual_now_ = end;
    stage_done(st, end);
    virtual_now_ = saved;
    return;
  }
  arm_timer(stage);
}

bool SimExecutor::can_chain(const Stage& stage, const Step* st) const {
  if (stage.rate <= 0 || !stage.waiting.empty()) return false;
  return can_hand_on(stage, st, stage.since_s + stage.remaining_flops / stage.rate);
}

// Whether st, ending `stage` at end_s (>= now), may enter the next stage in the executor's
// own time: chaining is on, the next stage is free by then with nobody waiting or coming
// (free_at_s = infinity: a step is about to enter), and st runs there as a timer.
bool SimExecutor::can_hand_on(const Stage& stage, const Step* st, double end_s) const {
  const size_t s = static_cast<size_t>(stage.index);
  if (s + 1 >= stages_.size()) return false;  // the last stage's end finishes the step
  const Stage& next = stages_[s + 1];
  if (next.busy || next.deferred || !next.waiting.empty() || next.free_at_s > end_s) return false;
  // stage_done then moves a deferred step of the previous stage into this one, in the same
  // own time: it must run as a timer here too.
  if (s > 0 && stages_[s - 1].deferred && !runs_as_timer(stage, stages_[s - 1].timed)) return false;
  return runs_as_timer(next, st);
}

bool SimExecutor::runs_as_timer(const Stage& stage, const Step* st) const {
  if (!speedups_.chain_stages) return false;
  // start_compute's test: no flows follow the compute there.
  const bool ring = stage.ring_flows && !stage.ring_analytic;
  const bool send = stage.send_flow && !stage.send_analytic;
  if (!ring && !send) return true;  // whatever the step's cost
  static const perf::StageCost kNone;
  const size_t s = static_cast<size_t>(stage.index);
  const perf::StageCost& c = s < st->cost.stages.size() ? st->cost.stages[s] : kNone;
  const bool flows_follow =
      (ring && c.allreduces > 0 && c.allreduce_bytes > 0) || (send && c.send_bytes > 0);
  return !flows_follow;
}

void SimExecutor::on_free(Stage& stage) {
  stage.free_timer = kNoTimer;                         // fired
  stage.free_at_s = std::min(stage.free_at_s, now());  // free now (whatever the rounding)
  if (stage.busy || stage.waiting.empty()) return;
  Step* next = stage.waiting.front();
  stage.waiting.pop_front();
  start_stage(next);
}

bool SimExecutor::can_defer(const Stage& stage) const {
  if (injector_ != nullptr || stage.rate <= 0 || !stage.waiting.empty()) return false;
  const size_t s = static_cast<size_t>(stage.index);
  if (s + 1 >= stages_.size()) return false;  // the last stage's end finishes the step
  const Stage& next = stages_[s + 1];
  // Busy, or about to be (a step enters it right after this one started: stage_done).
  const bool taken = next.busy || next.free_at_s == std::numeric_limits<double>::infinity();
  if (!taken || next.deferred) return false;
  return s == 0 || !stages_[s - 1].deferred;
}

void SimExecutor::settle(Stage& stage) {
  if (!stage.deferred) return;
  stage.deferred = false;
  Step* st = stage.timed;
  const double end = stage.deferred_end_s;
  if (end > now() && !can_hand_on(stage, st, end)) {
    arm_timer(stage);  // the same instant: since_s + remaining_flops / rate
    return;
  }
  stage.timed = nullptr;
  // As on_timer then phase_done at the stage's end (a timer stage has no flows to follow);
  // when that end is still ahead, in the executor's own time (chained stages).
  const double saved = virtual_now_;
  if (end > now()) virtual_now_ = end;
  stage_done(st, end);
  virtual_now_ = saved;
}

void SimExecutor::settle_all() {
  for (Stage& stage : stages_) settle(stage);
}

void SimExecutor::arm_timer(Stage& stage) {
  runtime_->cancel(stage.timer);
  stage.timer = kNoTimer;
  if (stage.rate <= 0) return;  // stalled until the speed changes, like an Exec
  Stage* sp = &stage;
  stage.timer = runtime_->at(stage.since_s + stage.remaining_flops / stage.rate,
                             [this, sp] { on_timer(*sp); });
}

void SimExecutor::on_timer(Stage& stage) {
  stage.timer = kNoTimer;  // fired
  Step* st = stage.timed;
  stage.timed = nullptr;
  if (st != nullptr) phase_done(st);
}

void SimExecutor::refresh_hosts(Stage& stage) {
  stage.down = nullptr;
  for (sg4::Host* h : stage.hosts)
    if (!h->is_on()) {
      stage.down = h;
      break;
    }
  stage.slowest_speed = std::numeric_limits<double>::infinity();
  for (sg4::Host* h : stage.hosts)
    stage.slowest_speed = std::min(stage.slowest_speed, SimPlatform::current_speed(h));
  stage.lead_speed = SimPlatform::current_speed(stage.lead);
  stage.hosts_known = true;
}

void SimExecutor::forget_hosts(sg4::Host* h) {
  for (Stage& stage : stages_)
    if (std::find(stage.hosts.begin(), stage.hosts.end(), h) != stage.hosts.end())
      stage.hosts_known = false;
}

void SimExecutor::on_host_speed_change(sg4::Host* h) {
  settle_all();
  forget_hosts(h);
  // Re-time the stages computing on h: the work done so far at the old rate, the rest at the
  // new one (what SimGrid does to an Exec).
  const double now = runtime_->now();
  for (Stage& stage : stages_) {
    if (stage.lead != h || stage.timed == nullptr) continue;
    stage.remaining_flops =
        std::max(0.0, stage.remaining_flops - (now - stage.since_s) * stage.rate);
    stage.since_s = now;
    stage.rate = SimPlatform::current_speed(h);
    arm_timer(stage);
  }
}

void SimExecutor::on_host_state_change(sg4::Host* h) {
  settle_all();
  forget_hosts(h);
  if (h->is_on()) return;
  for (Stage& stage : stages_) {
    if (stage.lead != h || stage.timed == nullptr) continue;
    runtime_->cancel(stage.timer);
    stage.timer = kNoTimer;
    Step* st = stage.timed;
    stage.timed = nullptr;
    // As a failed Exec on the lead GPU: reported on the loop, at this instant.
    fail_now(st, unavailable("sim: " + h->get_name() + " failed (replica " +
                             std::to_string(placement_.replica) + ", step " +
                             std::to_string(st->step_id) + ", stage " + std::to_string(st->stage) +
                             ")"));
  }
}

}  // namespace prima::sim
