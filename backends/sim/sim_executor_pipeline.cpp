// SimExecutor, closed-form pipeline (SimSpeedups::closed_form_pipeline, closed_form_sends): a
// step whose stages all run as timers (or as timers carrying their folded PP sends) is timed
// entirely at launch. See sim_executor.h.
//
// Why it is exact: steps enter stage 0 in launch order and every stage serves its FIFO in
// order, so stage s of a step starts at max(its end of stage s - 1 (launch time for stage
// 0), the end of the stage's previous step) and ends flops / lead speed later: what the
// event-driven stages compute (start_stage, start_timer, stage_done, the chained and
// deferred ends) with the same operations on the same doubles. The stages' free_at_s carry
// the previous step's end; with no event-driven step in flight nothing else occupies a
// stage. Valid while GPU speeds and link claims never change (chain_stages' conditions).
//
// Folded sends (closed_form_sends): a send rides on its stage's timer when its links are free
// for its whole interval, which an event-driven stage checks when it starts and a plan checks
// at launch, registering every send of the step ahead. A plan's send is as free as the
// event-driven stage would have found it, unless a flow that starts between the launch and
// the stage's start would have been seen: such a flow converts the planned send
// (on_fold_converted), and the replica's planned steps continue event-driven from where the
// plan has them (materialize), every later send deciding again at its stage's start. A flow
// that is on the links at launch but gone by the send's start makes the plan fail (the step
// runs event-driven): a plan is never freer than the event-driven stages. Steps that run
// event-driven are planned again (try_promote) at a later launch.
//
// Thread-safety: simulation loop only, like the rest of the executor.
#include <algorithm>
#include <simgrid/kernel/Timer.hpp>

#include "backends/sim/sim_executor.h"
#include "backends/sim/sim_executor_step.h"

namespace prima::sim {

bool SimExecutor::try_time_at_launch(Step* st) {
  if (!speedups_.closed_form_pipeline) return false;
  if (event_driven_inflight_ > 0 && !(speedups_.closed_form_sends && try_promote())) return false;
  bool folds = false;
  if (!can_plan(st, 0, &folds)) return false;
  if (!folds) {
    time_without_sends(st);
    return true;
  }
  plan_free_.resize(stages_.size());
  for (std::size_t s = 0; s < stages_.size(); ++s) plan_free_[s] = stages_[s].free_at_s;
  planned_.clear();
  if (!plan_stages(st, 0, runtime_->now())) {
    unplan();
    st->stage = 0;  // plan_stages walked it through the stages
    st->phase = Step::Phase::kCompute;
    return false;
  }
  for (std::size_t s = 0; s < stages_.size(); ++s) stages_[s].free_at_s = plan_free_[s];
  commit_timed(st, 0);
  return true;
}

void SimExecutor::time_without_sends(Step* st) {
  // plan_stages and commit_timed without folds, on the stages' free_at_s.
  st->timed_at_launch = true;
  st->send_folded = false;
  st->folds_planned = 0;
  const double nominal = platform_->nominal_speed();
  double t = runtime_->now();  // when st reaches the stage
  for (Stage& stage : stages_) {
    const auto s = static_cast<std::size_t>(stage.index);
    st->stage = stage.index;
    st->phase = Step::Phase::kCompute;
    const perf::StageCost& c = stage_cost(st, stage.index);
    const double analytic_s = stage_analytic_s(stage, st, c);
    const double lead = stage.lead_speed;
    const double flops =
        std::max(0.0, c.compute_s * nominal * (lead / stage.slowest_speed) + analytic_s * lead);
    const double start = stage.free_at_s > t ? stage.free_at_s : t;
    const double end = start + flops / lead;
    if (s == 0) st->start_s = start;
    st->t_start[s] = start;
    st->t_end[s] = end;
    st->t_flops[s] = flops;
    st->busy[s] = end - start;
    stage.free_at_s = end;
    t = end;
    ++activities_started_;
  }
  st->timer = runtime_->at(t, [this, st] {
    st->timer = kNoTimer;  // fired
    finish(st);
  });
}

bool SimExecutor::can_plan(const Step* st, std::size_t from, bool* folds) {
  for (std::size_t s = from; s < stages_.size(); ++s) {
    Stage& stage = stages_[s];
    if (!stage.hosts_known) refresh_hosts(stage);
    // A GPU that is off fails the step, a stalled lead never ends it: the event-driven path.
    if (stage.down != nullptr || !(stage.lead_speed > 0)) return false;
    if (runs_as_timer(stage, st)) continue;
    // Flows follow: only a PP send that can fold (no ring flows) is planned.
    if (!speedups_.closed_form_sends || !lone_flows()) return false;
    const perf::StageCost& c = stage_cost(st, static_cast<int>(s));
    const bool ring =
        stage.ring_flows && !stage.ring_analytic && c.allreduces > 0 && c.allreduce_bytes > 0;
    if (ring || !(stage.send.rate_Bps > 0)) return false;
    if (folds != nullptr) *folds = true;
  }
  return true;
}

bool SimExecutor::plan_fold(Stage& stage, Step* x, const perf::StageCost& c, double start,
                            double* flops) {
  FoldedSend& f = x->folds[static_cast<std::size_t>(stage.index)];
  f.ex = this;
  f.st = x;
  f.path = &stage.send;
  f.route = stage.send.occ;
  f.stage = stage.index;
  f.compute_flops = *flops;
  f.send_start_s = start + *flops / stage.lead_speed;                  // the compute timer's end
  f.bytes = static_cast<double>(static_cast<uint64_t>(c.send_bytes));  // as start_send
  LinkOccupancy& occ = platform_->occupancy();
  if (!occ.idle(*f.path->occ, f.send_start_s, f.lone_end_s())) return false;
  occ.add_lone(&f);
  x->folds_registered |= 1u << stage.index;
  x->folds_planned |= 1u << stage.index;
  planned_.push_back(&f);
  *flops = *flops + (f.lone_end_s() - f.send_start_s) * stage.lead_speed;  // as fold_send
  return true;
}

bool SimExecutor::plan_stages(Step* x, std::size_t from, double arrival) {
  const double nominal = platform_->nominal_speed();
  double t = arrival;  // when x reaches the stage
  for (std::size_t s = from; s < stages_.size(); ++s) {
    Stage& stage = stages_[s];
    x->stage = static_cast<int>(s);
    x->phase = Step::Phase::kCompute;
    const perf::StageCost& c = stage_cost(x, stage.index);
    const double analytic_s = stage_analytic_s(stage, x, c);
    // start_compute's flops and start_timer's end: the same expressions.
    const double lead = stage.lead_speed;
    double flops =
        std::max(0.0, c.compute_s * nominal * (lead / stage.slowest_speed) + analytic_s * lead);
    const double start = plan_free_[s] > t ? plan_free_[s] : t;
    x->folds_planned &= ~(1u << s);
    if (stage.send_flow && !stage.send_analytic && c.send_bytes > 0 &&
        !plan_fold(stage, x, c, start, &flops))
      return false;
    const double end = start + flops / lead;
    x->t_start[s] = start;
    x->t_end[s] = end;
    x->t_flops[s] = flops;
    plan_free_[s] = end;
    t = end;
  }
  return true;
}

void SimExecutor::unplan() {
  for (FoldedSend* f : planned_) {
    unregister_fold(f->st, f->stage);
    f->st->folds_planned &= ~(1u << f->stage);
  }
  planned_.clear();
}

void SimExecutor::unregister_fold(Step* x, int stage) {
  const std::uint32_t bit = 1u << stage;
  if ((x->folds_registered & bit) == 0) return;
  platform_->occupancy().remove_lone(&x->folds[static_cast<std::size_t>(stage)]);
  x->folds_registered &= ~bit;
}

void SimExecutor::unregister_folds(Step* x) {
  while (x->folds_registered != 0) unregister_fold(x, __builtin_ctz(x->folds_registered));
}

void SimExecutor::commit_timed(Step* x, std::size_t from) {
  x->timed_at_launch = true;
  x->send_folded = false;
  const std::size_t n = stages_.size();
  if (from == 0) x->start_s = x->t_start[0];
  for (std::size_t s = from; s < n; ++s) {
    x->busy[s] = x->t_end[s] - x->t_start[s];
    ++activities_started_;
  }
  x->timer = runtime_->at(x->t_end[n - 1], [this, x] {
    x->timer = kNoTimer;  // fired
    unregister_folds(x);
    finish(x);
  });
}

void SimExecutor::in_flight_steps() {
  inflight_.clear();
  for (const auto& x : all_steps_)
    if (x->in_flight) inflight_.push_back(x.get());
  std::sort(inflight_.begin(), inflight_.end(),
            [](const Step* a, const Step* b) { return a->launch_seq < b->launch_seq; });
}

void SimExecutor::materialize(double now) {
  const std::size_t n = stages_.size();
  in_flight_steps();
  for (Step* x : inflight_) {
    if (!x->timed_at_launch) continue;
    std::size_t s = 0;
    while (s < n && x->t_end[s] <= now) ++s;
    if (s == n) continue;  // it ends now: its finish timer is due at this instant
    runtime_->cancel(x->timer);
    x->timer = kNoTimer;
    x->timed_at_launch = false;
    ++event_driven_inflight_;
    ++materialized_;
    const bool in_stage = x->t_start[s] <= now;
    for (std::size_t k = 0; k < n; ++k)
      if (!(in_stage && k == s)) unregister_fold(x, static_cast<int>(k));
    x->stage = static_cast<int>(s);
    x->phase = Step::Phase::kCompute;
    x->send_folded = false;
    Stage& stage = stages_[s];
    if (!in_stage) {  // its turn comes when the stage's step before it ends
      stage.waiting.push_back(x);
      continue;
    }
    // In the stage's timer, as start_timer left it (the send folded: registered, or being
    // converted right now).
    stage.busy = true;
    stage.timed = x;
    stage.since_s = x->t_start[s];
    stage.rate = stage.lead_speed;
    stage.remaining_flops = x->t_flops[s];
    x->stage_start_s = x->t_start[s];
    x->send_folded = (x->folds_planned >> s) & 1u;
    arm_timer(stage);  // at t_start + t_flops / lead: the planned end
  }
  // A stage no step is in was left by its last step at or before now; its free_at_s may hold
  // a later step's planned end (which the step no longer follows).
  for (Stage& stage : stages_)
    if (!stage.busy) stage.free_at_s = std::min(stage.free_at_s, now);
}

bool SimExecutor::try_promote() {
  if (virtual_now_ >= 0 || !lone_flows()) return false;
  for (const Stage& stage : stages_) {
    if (stage.deferred || stage.free_timer != kNoTimer) return false;
    if (stage.busy && (stage.timed == nullptr || stage.timer == kNoTimer || !(stage.rate > 0)))
      return false;
    if (!stage.busy && !stage.waiting.empty()) return false;
  }
  in_flight_steps();
  for (Step* x : inflight_) {
    if (x->timed_at_launch) return false;  // (steps timed at launch never run beside others)
    const auto s = static_cast<std::size_t>(x->stage);
    const Stage& stage = stages_[s];
    if (stage.timed == x) {
      // Computing, its send folded (registered since the stage started) or plannable from
      // the compute's end (as start_flow would find it then, a lone flow).
      if (x->pending != 0 || x->phase != Step::Phase::kCompute) return false;
      if (!can_plan(x, x->send_folded ? s + 1 : s)) return false;
    } else {
      if (std::find(stage.waiting.begin(), stage.waiting.end(), x) == stage.waiting.end())
        return false;
      if (!can_plan(x, s)) return false;
    }
  }
  // Plan in launch order: a stage's step in progress comes before the steps waiting for it.
  const std::size_t n = stages_.size();
  plan_free_.resize(n);
  for (std::size_t s = 0; s < n; ++s) plan_free_[s] = stages_[s].free_at_s;
  planned_.clear();
  const double now = runtime_->now();
  int computing = 0;  // steps in a stage's timer: that activity was counted when it started
  for (Step* x : inflight_) {
    const auto s = static_cast<std::size_t>(x->stage);
    Stage& stage = stages_[s];
    if (stage.timed != x) {
      const bool ok = plan_stages(x, s, now);
      x->stage = static_cast<int>(s);
      if (!ok) return unplan(), false;
      continue;
    }
    ++computing;
    x->folds_planned = 0;
    double flops = stage.remaining_flops;
    if (x->send_folded) {
      x->folds_planned |= 1u << s;  // registered since the stage started
    } else if (!runs_as_timer(stage, x) &&
               !plan_fold(stage, x, stage_cost(x, stage.index), stage.since_s, &flops)) {
      return unplan(), false;
    }
    x->t_start[s] = stage.since_s;
    x->t_flops[s] = flops;
    x->t_end[s] = stage.since_s + flops / stage.rate;  // arm_timer's instant
    plan_free_[s] = x->t_end[s];
    const bool ok = plan_stages(x, s + 1, x->t_end[s]);
    x->stage = static_cast<int>(s);
    if (!ok) return unplan(), false;
  }
  // Every step's future is planned: the stages' timers and queues give way to the plans.
  for (std::size_t s = 0; s < n; ++s) {
    Stage& stage = stages_[s];
    runtime_->cancel(stage.timer);
    stage.timer = kNoTimer;
    stage.busy = false;
    stage.timed = nullptr;
    stage.waiting.clear();
    stage.free_at_s = plan_free_[s];
  }
  // busy[] of the stages a step left is final; from the stage it is in or waits for on, its
  // plan.
  for (Step* x : inflight_) commit_timed(x, static_cast<std::size_t>(x->stage));
  activities_started_ -= static_cast<std::uint64_t>(computing);
  promoted_ += inflight_.size();
  event_driven_inflight_ = 0;
  return true;
}

void SimExecutor::on_fold_converted(FoldedSend* f, double now, double eps) {
  Step* st = f->st;
  st->folds_registered &= ~(1u << f->stage);  // LinkOccupancy dropped it
  if (st->timed_at_launch) {
    if (f->lone_end_s() <= now + eps) return;  // over, or ends alone as planned
    materialize(now);
  }
  if (f->stage != st->stage || !st->send_folded ||
      stages_[static_cast<std::size_t>(st->stage)].timed != st)
    return;  // a later stage's send: it decides when that stage starts
  unfold_send(f, now, eps);
}

}  // namespace prima::sim
