// StageCompute (see sim_executor_compute.h): the compute phase, timer stages, deferred and
// chained stage ends, and the host watchers that re-time or fail timers when a GPU's speed or
// state changes. Thread-safety: simulation loop only, like the rest of the executor.
#include "backends/sim/sim_executor_compute.h"

#include <algorithm>
#include <limits>
#include <simgrid/s4u.hpp>
#include <string>

#include "backends/sim/sim_executor.h"

namespace sg4 = simgrid::s4u;

namespace prima::sim::exec {

// ---- Reference: the compute phase (an Exec), or a timer stage.

void StageCompute::start_compute(Step* st) {
  st->phase = Step::Phase::kCompute;
  Stage& stage = rep_.stages[st->stage];
  const perf::StageCost& c = stage_cost(st, st->stage);
  const double analytic_s = rep_.transfers->stage_analytic_s(stage, st, c);
  if (!stage.hosts_known) refresh_hosts(stage);
  if (sg4::Host* h = stage.down) {
    rep_.executor->fail_now(st, unavailable("sim: " + h->get_name() + " is down (replica " +
                                            std::to_string(rep_.placement.replica) + ", step " +
                                            std::to_string(st->step_id) + ", stage " +
                                            std::to_string(st->stage) + ")"));
    return;
  }
  const double nominal = rep_.platform->nominal_speed();
  if (rep_.speedups.aggregate_stage_execs) {
    const double slowest = stage.slowest_speed;
    const double lead = stage.lead_speed;
    const double flops = c.compute_s * nominal * (lead / slowest) + analytic_s * lead;
    const bool flows_follow = collective_flows_follow(stage, c) || send_flow_follows(stage, c);
    // With lone flows, the timer's end starts the flows (phase_done) as the Exec's would,
    // or the send rides on the timer while its links stay free (fold_send).
    if (rep_.speedups.timer_stages && (!flows_follow || rep_.speedups.lone_flows)) {
      const double folded =
          flows_follow ? rep_.transfers->fold_send(stage, st, c, std::max(0.0, flops)) : -1;
      start_timer(stage, st, folded >= 0 ? folded : std::max(0.0, flops), flows_follow);
      return;
    }
    rep_.executor->track(
        st, sg4::Exec::init()->set_host(stage.lead)->set_flops_amount(std::max(0.0, flops)),
        stage.lead, nullptr);
  } else {
    for (sg4::Host* h : stage.hosts) {
      const double flops = c.compute_s * nominal + analytic_s * SimPlatform::current_speed(h);
      rep_.executor->track(
          st, sg4::Exec::init()->set_host(h)->set_flops_amount(std::max(0.0, flops)), h, nullptr);
    }
  }
}

// ---- Timer stages (timer_stages).

void StageCompute::start_timer(Stage& stage, Step* st, double flops, bool flows_follow) {
  ++rep_.activities_started;
  stage.timed = st;
  stage.remaining_flops = flops;
  stage.rate = stage.lead_speed;  // fresh: start_compute refreshed it
  stage.since_s = rep_.now();
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
    const double saved = rep_.virtual_now;
    rep_.virtual_now = end;
    rep_.executor->stage_done(st, end);
    rep_.virtual_now = saved;
    return;
  }
  arm_timer(stage);
}

void StageCompute::arm_timer(Stage& stage) {
  rep_.runtime->cancel(stage.timer);
  stage.timer = kNoTimer;
  if (stage.rate <= 0) return;  // stalled until the speed changes, like an Exec
  Stage* sp = &stage;
  stage.timer = rep_.runtime->at(stage.since_s + stage.remaining_flops / stage.rate,
                                 [this, sp] { on_timer(*sp); });
}

void StageCompute::on_timer(Stage& stage) {
  stage.timer = kNoTimer;  // fired
  Step* st = stage.timed;
  stage.timed = nullptr;
  if (st != nullptr) rep_.executor->phase_done(st);
}

// ---- Deferred ends.

bool StageCompute::can_defer(const Stage& stage) const {
  if (rep_.injector != nullptr || stage.rate <= 0 || !stage.waiting.empty()) return false;
  const size_t s = static_cast<size_t>(stage.index);
  if (s + 1 >= rep_.stages.size()) return false;  // the last stage's end finishes the step
  const Stage& next = rep_.stages[s + 1];
  // Busy, or about to be (a step enters it right after this one started: stage_done).
  const bool taken = next.busy || next.free_at_s == std::numeric_limits<double>::infinity();
  if (!taken || next.deferred) return false;
  return s == 0 || !rep_.stages[s - 1].deferred;
}

void StageCompute::settle(Stage& stage) {
  if (!stage.deferred) return;
  stage.deferred = false;
  Step* st = stage.timed;
  const double end = stage.deferred_end_s;
  if (end > rep_.now() && !can_hand_on(stage, st, end)) {
    arm_timer(stage);  // the same instant: since_s + remaining_flops / rate
    return;
  }
  stage.timed = nullptr;
  // As on_timer then phase_done at the stage's end (a timer stage has no flows to follow);
  // when that end is still ahead, in the executor's own time (chained stages).
  const double saved = rep_.virtual_now;
  if (end > rep_.now()) rep_.virtual_now = end;
  rep_.executor->stage_done(st, end);
  rep_.virtual_now = saved;
}

void StageCompute::settle_all() {
  for (Stage& stage : rep_.stages) settle(stage);
}

// ---- Chained stages (chain_stages).

bool StageCompute::can_chain(const Stage& stage, const Step* st) const {
  if (stage.rate <= 0 || !stage.waiting.empty()) return false;
  return can_hand_on(stage, st, stage.since_s + stage.remaining_flops / stage.rate);
}

// Whether st, ending `stage` at end_s (>= now), may enter the next stage in the executor's
// own time: chaining is on, the next stage is free by then with nobody waiting or coming
// (free_at_s = infinity: a step is about to enter), and st runs there as a timer.
bool StageCompute::can_hand_on(const Stage& stage, const Step* st, double end_s) const {
  const size_t s = static_cast<size_t>(stage.index);
  if (s + 1 >= rep_.stages.size()) return false;  // the last stage's end finishes the step
  const Stage& next = rep_.stages[s + 1];
  if (next.busy || next.deferred || !next.waiting.empty() || next.free_at_s > end_s) return false;
  // stage_done then moves a deferred step of the previous stage into this one, in the same
  // own time: it must run as a timer here too.
  if (s > 0 && rep_.stages[s - 1].deferred && !runs_as_timer(stage, rep_.stages[s - 1].timed))
    return false;
  return runs_as_timer(next, st);
}

bool StageCompute::runs_as_timer(const Stage& stage, const Step* st) const {
  if (!rep_.speedups.chain_stages) return false;
  // start_compute's test: no flows follow the compute there.
  const bool ring =
      (stage.ring_flows && !stage.ring_analytic) || (stage.a2a_flows && !stage.a2a_analytic);
  const bool send = stage.send_flow && !stage.send_analytic;
  if (!ring && !send) return true;  // whatever the step's cost
  const perf::StageCost& c = stage_cost(st, stage.index);
  return !collective_flows_follow(stage, c) && !send_flow_follows(stage, c);
}

void StageCompute::on_free(Stage& stage) {
  stage.free_timer = kNoTimer;                              // fired
  stage.free_at_s = std::min(stage.free_at_s, rep_.now());  // free now (whatever the rounding)
  if (stage.busy || stage.waiting.empty()) return;
  Step* next = stage.waiting.front();
  stage.waiting.pop_front();
  rep_.executor->start_stage(next);
}

// ---- The host cache and the host watchers.

void StageCompute::refresh_hosts(Stage& stage) {
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

void StageCompute::forget_hosts(sg4::Host* h) {
  for (Stage& stage : rep_.stages)
    if (std::find(stage.hosts.begin(), stage.hosts.end(), h) != stage.hosts.end())
      stage.hosts_known = false;
}

void StageCompute::on_host_speed_change(sg4::Host* h) {
  settle_all();
  forget_hosts(h);
  // Re-time the stages computing on h: the work done so far at the old rate, the rest at the
  // new one (what SimGrid does to an Exec).
  const double now = rep_.runtime->now();
  for (Stage& stage : rep_.stages) {
    if (stage.lead != h || stage.timed == nullptr) continue;
    stage.remaining_flops =
        std::max(0.0, stage.remaining_flops - (now - stage.since_s) * stage.rate);
    stage.since_s = now;
    stage.rate = SimPlatform::current_speed(h);
    arm_timer(stage);
  }
}

void StageCompute::on_host_state_change(sg4::Host* h) {
  settle_all();
  forget_hosts(h);
  if (h->is_on()) return;
  for (Stage& stage : rep_.stages) {
    if (stage.lead != h || stage.timed == nullptr) continue;
    rep_.runtime->cancel(stage.timer);
    stage.timer = kNoTimer;
    Step* st = stage.timed;
    stage.timed = nullptr;
    // As a failed Exec on the lead GPU: reported on the loop, at this instant.
    rep_.executor->fail_now(st, unavailable("sim: " + h->get_name() + " failed (replica " +
                                            std::to_string(rep_.placement.replica) + ", step " +
                                            std::to_string(st->step_id) + ", stage " +
                                            std::to_string(st->stage) + ")"));
  }
}

}  // namespace prima::sim::exec
