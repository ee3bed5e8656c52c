// ClosedForm (see sim_executor_closed_form.h): steps timed at launch, planned sends,
// materialize and promote. Thread-safety: simulation loop only, like the rest of the executor.
#include "backends/sim/sim_executor_closed_form.h"

#include <algorithm>
#include <simgrid/kernel/Timer.hpp>

#include "backends/sim/sim_executor.h"

namespace prima::sim::exec {

void FoldedSend::convert(double now, double eps) {
  rep->closed_form->on_fold_converted(this, now, eps);
}

bool ClosedForm::try_time_at_launch(Step* st) {
  if (!rep_.speedups.closed_form_pipeline) return false;
  if (event_driven_inflight_ > 0 && !(rep_.speedups.closed_form_sends && try_promote()))
    return false;
  bool folds = false;
  if (!can_plan(st, 0, &folds)) return false;
  if (!folds) {
    time_without_sends(st);
    return true;
  }
  plan_free_.resize(rep_.stages.size());
  for (std::size_t s = 0; s < rep_.stages.size(); ++s) plan_free_[s] = rep_.stages[s].free_at_s;
  planned_.clear();
  if (!plan_stages(st, 0, rep_.runtime->now())) {
    unplan();
    st->stage = 0;  // plan_stages walked it through the stages
    st->phase = Step::Phase::kCompute;
    return false;
  }
  for (std::size_t s = 0; s < rep_.stages.size(); ++s) rep_.stages[s].free_at_s = plan_free_[s];
  commit_timed(st, 0);
  return true;
}

void ClosedForm::time_without_sends(Step* st) {
  // plan_stages and commit_timed without folds, on the stages' free_at_s.
  st->timed_at_launch = true;
  st->send_folded = false;
  st->folds_planned = 0;
  const double nominal = rep_.platform->nominal_speed();
  double t = rep_.runtime->now();  // when st reaches the stage
  for (Stage& stage : rep_.stages) {
    const auto s = static_cast<std::size_t>(stage.index);
    st->stage = stage.index;
    st->phase = Step::Phase::kCompute;
    const perf::StageCost& c = stage_cost(st, stage.index);
    const double analytic_s = rep_.transfers->stage_analytic_s(stage, st, c);
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
    ++rep_.activities_started;
  }
  st->timer = rep_.runtime->at(t, [this, st] {
    st->timer = kNoTimer;  // fired
    rep_.executor->finish(st);
  });
}

bool ClosedForm::can_plan(const Step* st, std::size_t from, bool* folds) {
  for (std::size_t s = from; s < rep_.stages.size(); ++s) {
    Stage& stage = rep_.stages[s];
    if (!stage.hosts_known) rep_.compute->refresh_hosts(stage);
    // A GPU that is off fails the step, a stalled lead never ends it: the event-driven path.
    if (stage.down != nullptr || !(stage.lead_speed > 0)) return false;
    if (rep_.compute->runs_as_timer(stage, st)) continue;
    // Flows follow: only a PP send that can fold (no ring flows) is planned.
    if (!rep_.speedups.closed_form_sends || !rep_.speedups.lone_flows) return false;
    const perf::StageCost& c = stage_cost(st, static_cast<int>(s));
    if (collective_flows_follow(stage, c) || !(stage.send.rate_Bps > 0)) return false;
    if (folds != nullptr) *folds = true;
  }
  return true;
}

bool ClosedForm::plan_fold(Stage& stage, Step* x, const perf::StageCost& c, double start,
                           double* flops) {
  const double folded = rep_.transfers->register_fold(stage, x, c, start, *flops);
  if (folded < 0) return false;
  x->folds_planned |= 1u << stage.index;
  planned_.push_back(&x->folds[static_cast<std::size_t>(stage.index)]);
  *flops = folded;
  return true;
}

bool ClosedForm::plan_stages(Step* x, std::size_t from, double arrival) {
  const double nominal = rep_.platform->nominal_speed();
  double t = arrival;  // when x reaches the stage
  for (std::size_t s = from; s < rep_.stages.size(); ++s) {
    Stage& stage = rep_.stages[s];
    x->stage = static_cast<int>(s);
    x->phase = Step::Phase::kCompute;
    const perf::StageCost& c = stage_cost(x, stage.index);
    const double analytic_s = rep_.transfers->stage_analytic_s(stage, x, c);
    // start_compute's flops and start_timer's end: the same expressions.
    const double lead = stage.lead_speed;
    double flops =
        std::max(0.0, c.compute_s * nominal * (lead / stage.slowest_speed) + analytic_s * lead);
    const double start = plan_free_[s] > t ? plan_free_[s] : t;
    x->folds_planned &= ~(1u << s);
    if (send_flow_follows(stage, c) && !plan_fold(stage, x, c, start, &flops)) return false;
    const double end = start + flops / lead;
    x->t_start[s] = start;
    x->t_end[s] = end;
    x->t_flops[s] = flops;
    plan_free_[s] = end;
    t = end;
  }
  return true;
}

void ClosedForm::unplan() {
  for (FoldedSend* f : planned_) {
    rep_.transfers->unregister_fold(f->st, f->stage);
    f->st->folds_planned &= ~(1u << f->stage);
  }
  planned_.clear();
}

void ClosedForm::commit_timed(Step* x, std::size_t from) {
  x->timed_at_launch = true;
  x->send_folded = false;
  const std::size_t n = rep_.stages.size();
  if (from == 0) x->start_s = x->t_start[0];
  for (std::size_t s = from; s < n; ++s) {
    x->busy[s] = x->t_end[s] - x->t_start[s];
    ++rep_.activities_started;
  }
  x->timer = rep_.runtime->at(x->t_end[n - 1], [this, x] {
    x->timer = kNoTimer;  // fired
    rep_.transfers->unregister_folds(x);
    rep_.executor->finish(x);
  });
}

void ClosedForm::in_flight_steps() {
  inflight_.clear();
  for (const auto& x : rep_.steps)
    if (x->in_flight) inflight_.push_back(x.get());
  std::sort(inflight_.begin(), inflight_.end(),
            [](const Step* a, const Step* b) { return a->launch_seq < b->launch_seq; });
}

void ClosedForm::materialize(double now) {
  const std::size_t n = rep_.stages.size();
  in_flight_steps();
  for (Step* x : inflight_) {
    if (!x->timed_at_launch) continue;
    std::size_t s = 0;
    while (s < n && x->t_end[s] <= now) ++s;
    if (s == n) continue;  // it ends now: its finish timer is due at this instant
    rep_.runtime->cancel(x->timer);
    x->timer = kNoTimer;
    x->timed_at_launch = false;
    ++event_driven_inflight_;
    ++materialized_;
    const bool in_stage = x->t_start[s] <= now;
    for (std::size_t k = 0; k < n; ++k)
      if (!(in_stage && k == s)) rep_.transfers->unregister_fold(x, static_cast<int>(k));
    x->stage = static_cast<int>(s);
    x->phase = Step::Phase::kCompute;
    x->send_folded = false;
    Stage& stage = rep_.stages[s];
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
    rep_.compute->arm_timer(stage);  // at t_start + t_flops / lead: the planned end
  }
  // A stage no step is in was left by its last step at or before now; its free_at_s may hold
  // a later step's planned end (which the step no longer follows).
  for (Stage& stage : rep_.stages)
    if (!stage.busy) stage.free_at_s = std::min(stage.free_at_s, now);
}

bool ClosedForm::try_promote() {
  if (rep_.virtual_now >= 0 || !rep_.speedups.lone_flows) return false;
  for (const Stage& stage : rep_.stages) {
    if (stage.deferred || stage.free_timer != kNoTimer) return false;
    if (stage.busy && (stage.timed == nullptr || stage.timer == kNoTimer || !(stage.rate > 0)))
      return false;
    if (!stage.busy && !stage.waiting.empty()) return false;
  }
  in_flight_steps();
  for (Step* x : inflight_) {
    if (x->timed_at_launch) return false;  // (steps timed at launch never run beside others)
    const auto s = static_cast<std::size_t>(x->stage);
    const Stage& stage = rep_.stages[s];
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
  const std::size_t n = rep_.stages.size();
  plan_free_.resize(n);
  for (std::size_t s = 0; s < n; ++s) plan_free_[s] = rep_.stages[s].free_at_s;
  planned_.clear();
  const double now = rep_.runtime->now();
  int computing = 0;  // steps in a stage's timer: that activity was counted when it started
  for (Step* x : inflight_) {
    const auto s = static_cast<std::size_t>(x->stage);
    Stage& stage = rep_.stages[s];
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
    } else if (!rep_.compute->runs_as_timer(stage, x) &&
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
    Stage& stage = rep_.stages[s];
    rep_.runtime->cancel(stage.timer);
    stage.timer = kNoTimer;
    stage.busy = false;
    stage.timed = nullptr;
    stage.waiting.clear();
    stage.free_at_s = plan_free_[s];
  }
  // busy[] of the stages a step left is final; from the stage it is in or waits for on, its
  // plan.
  for (Step* x : inflight_) commit_timed(x, static_cast<std::size_t>(x->stage));
  rep_.activities_started -= static_cast<std::uint64_t>(computing);
  promoted_ += inflight_.size();
  event_driven_inflight_ = 0;
  return true;
}

void ClosedForm::on_fold_converted(FoldedSend* f, double now, double eps) {
  Step* st = f->st;
  st->folds_registered &= ~(1u << f->stage);  // LinkOccupancy dropped it
  if (st->timed_at_launch) {
    if (f->lone_end_s() <= now + eps) return;  // over, or ends alone as planned
    materialize(now);
  }
  if (f->stage != st->stage || !st->send_folded ||
      rep_.stages[static_cast<std::size_t>(st->stage)].timed != st)
    return;  // a later stage's send: it decides when that stage starts
  rep_.transfers->unfold_send(f, now, eps);
}

}  // namespace prima::sim::exec
