// SimExecutor (see sim_executor.h): a step's life. launch() times it at launch when it can
// (ClosedForm) or sends it into stage 0; each stage serves its FIFO: the compute phase
// (StageCompute), then the ring and send flows (Transfers), then the stage's end moves the
// step on or finishes it.
#include "backends/sim/sim_executor.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <simgrid/s4u.hpp>
#include <stdexcept>
#include <string>

#include "backends/sim/activity_dispatch.h"

namespace sg4 = simgrid::s4u;

namespace prima::sim {

SimCostFns default_cost_fns(std::function<perf::StepCost(const BatchShape&)> step) {
  SimCostFns f;
  f.step = std::move(step);
  f.allreduce_s = [](double bytes, int p, double bw, double lat) {
    if (p <= 1) return 0.0;
    return 2.0 * (p - 1) / p * bytes / bw + 2.0 * (p - 1) * lat;
  };
  f.send_s = [](double bytes, double bw, double lat) { return bytes / bw + lat; };
  f.alltoall_s = [](double bytes, int p, int gpn, const plan::LinkSpec& nvlink,
                    const plan::LinkSpec& nic) {
    if (p <= 1) return 0.0;
    gpn = std::max(1, std::min(gpn, p));
    const double intra = bytes * (gpn - 1) / (p - 1), inter = bytes - intra;
    const double t = std::max(gpn > 1 ? intra / nvlink.bandwidth_Bps : 0.0,
                              inter > 0 ? gpn * inter / nic.bandwidth_Bps : 0.0);
    return (p > gpn ? nic.latency_s : nvlink.latency_s) + t;
  };
  return f;
}

void exec::Step::on_activity_end(const sg4::Activity& a, bool ok) {
  ex->on_end(this, a, ok);
}

SimExecutor::SimExecutor(SimPlatform* platform, Runtime* runtime, plan::ReplicaPlacement placement,
                         SimCostFns costs, SimSpeedups speedups)
    : compute_(rep_), transfers_(rep_), closed_form_(rep_), faults_(rep_) {
  rep_.platform = platform;
  rep_.runtime = runtime;
  rep_.placement = std::move(placement);
  rep_.costs = std::move(costs);
  rep_.speedups = speedups;
  rep_.nvlink = platform->topology().node.nvlink;
  rep_.executor = this;
  rep_.compute = &compute_;
  rep_.transfers = &transfers_;
  rep_.closed_form = &closed_form_;
  rep_.faults = &faults_;
  if (speedups.lone_flows && !platform->occupancy().enabled())
    throw std::logic_error(
        "sim: lone_flows without the platform's link occupancy "
        "(SimPlatform::enable_lone_flows)");
  const auto& topo = platform->topology();
  const auto& dev = rep_.placement.devices;
  rep_.stages.resize(dev.size());
  for (size_t s = 0; s < dev.size(); ++s) {
    Stage& st = rep_.stages[s];
    st.index = static_cast<int>(s);
    for (DeviceId d : dev[s]) st.hosts.push_back(platform->host_of(d));
    st.lead = st.hosts.at(0);
    const int node = topo.node_of(dev[s][0]);
    st.ep_intra_node = std::all_of(dev[s].begin(), dev[s].end(),
                                   [&](DeviceId d) { return topo.node_of(d) == node; });
    // Each TP group (tp_group consecutive GPUs of the stage) all-reduces within itself.
    const int stage_gpus = static_cast<int>(dev[s].size());
    st.tp_group =
        rep_.placement.tp_group > 0 ? std::min(rep_.placement.tp_group, stage_gpus) : stage_gpus;
    st.tp_intra_node = true;
    for (size_t i = 0; i < dev[s].size(); ++i)
      if (topo.node_of(dev[s][i]) != topo.node_of(dev[s][i - i % st.tp_group]))
        st.tp_intra_node = false;
    st.all_to_all = rep_.placement.all_to_all && dev[s].size() > 1;
    if (s + 1 < dev.size()) {
      st.next_lead = platform->host_of(dev[s + 1].at(0));
      st.send_intra_node = topo.node_of(dev[s + 1][0]) == node;
    }
    transfers_.lay_out(st);
  }
  for (const auto& d : dev)
    for (DeviceId g : d) platform->watch_host(g, &compute_);
}

SimExecutor::~SimExecutor() {
  for (const auto& d : rep_.placement.devices)
    for (DeviceId g : d) rep_.platform->unwatch_host(g, &compute_);
  for (Stage& st : rep_.stages) {
    rep_.runtime->cancel(st.timer);
    st.timer = kNoTimer;
    rep_.runtime->cancel(st.free_timer);
    st.free_timer = kNoTimer;
  }
  transfers_.release_paths();
  for (const auto& st : rep_.steps) {
    rep_.runtime->cancel(st->timer);
    transfers_.cancel_lone(st.get());
    transfers_.unregister_folds(st.get());
  }
}

void SimExecutor::set_fault_injector(FaultInjector* injector) {
  // Speed-ups that assume GPUs and links never change (sim_strategy.h).
  if (injector != nullptr && (rep_.speedups.chain_stages || rep_.speedups.lone_flows))
    throw std::logic_error("sim: chained stages or lone flows under a fault timeline");
  rep_.injector = injector;
}

void SimExecutor::check_health(std::function<void(Status)> done) {
  faults_.check_health(std::move(done));
}

exec::Step* SimExecutor::acquire() {
  if (free_steps_.empty()) {
    rep_.steps.push_back(std::make_unique<Step>());
    rep_.steps.back()->ex = this;
    Step& st = *rep_.steps.back();
    st.folds.resize(rep_.stages.size());  // once: registered sends keep their address
    st.t_start.resize(rep_.stages.size());
    st.t_end.resize(rep_.stages.size());
    st.t_flops.resize(rep_.stages.size());
    return rep_.steps.back().get();
  }
  Step* st = free_steps_.back();
  free_steps_.pop_back();
  return st;
}

void SimExecutor::release(Step* st) {
  st->done = nullptr;
  free_steps_.push_back(st);
}

void SimExecutor::launch(const StepBatch& step, std::function<void(const StepResult&)> done) {
  Step* st = acquire();
  transfers_.refresh_if_claims_changed();
  st->step_id = step.step_id;
  if (rep_.costs.step_into)
    rep_.costs.step_into(step.shape, &st->cost);
  else
    st->cost = rep_.costs.step(step.shape);
  st->done = std::move(done);
  st->stage = 0;
  st->pending = 0;
  st->status = ok_status();
  st->start_s = rep_.runtime->now();
  st->busy.assign(rep_.stages.size(), 0.0);
  st->folds_planned = 0;
  st->launch_seq = ++launches_;
  st->timed_at_launch = false;
  // st joins the steps in flight (in_flight) once timed or started: until then
  // try_promote and materialize see only the others.
  if (closed_form_.try_time_at_launch(st)) {
    st->in_flight = true;
    return;
  }
  // With closed_form_sends, steps timed at launch never run beside event-driven ones: those in
  // flight continue event-driven, ahead of st.
  if (rep_.speedups.closed_form_sends) closed_form_.materialize(rep_.runtime->now());
  closed_form_.event_driven_started();
  st->in_flight = true;
  start_stage(st);
}

void SimExecutor::start_stage(Step* st) {
  Stage& stage = rep_.stages[st->stage];
  if (stage.deferred) compute_.settle(stage);  // a step arrives: the stage's end is an event again
  if (stage.busy) {
    stage.waiting.push_back(st);
    return;
  }
  if (stage.free_at_s > rep_.now() && stage.waiting.empty() && compute_.runs_as_timer(stage, st)) {
    // Its last step left it ahead of the clock (chained): st starts there then, in the
    // executor's own time, as it would from the queue.
    const double saved = rep_.virtual_now;
    rep_.virtual_now = stage.free_at_s;
    stage.busy = true;
    st->stage_start_s = rep_.now();
    if (st->stage == 0) st->start_s = st->stage_start_s;
    compute_.start_compute(st);
    rep_.virtual_now = saved;
    return;
  }
  if (stage.free_at_s > rep_.now()) {  // its last step left it ahead of the clock (chained)
    stage.waiting.push_back(st);
    if (stage.free_timer == kNoTimer) {
      Stage* sp = &stage;
      stage.free_timer = rep_.runtime->at(stage.free_at_s, [this, sp] { compute_.on_free(*sp); });
    }
    return;
  }
  stage.busy = true;
  st->stage_start_s = rep_.now();
  if (st->stage == 0) st->start_s = st->stage_start_s;
  compute_.start_compute(st);
}

void SimExecutor::fail_now(Step* st, Status s) {
  if (st->status.ok()) st->status = std::move(s);
  // Not from inside launch(): report on the loop.
  rep_.runtime->at(rep_.runtime->now(), [this, st] { phase_done(st); });
}

void SimExecutor::track(Step* st, sg4::ActivityPtr a, sg4::Host* src, sg4::Host* dst,
                        const std::vector<sg4::Link*>* route, double bytes) {
  a->set_data(static_cast<CompletionTarget*>(st));
  st->acts.push_back(a);
  st->srcs.push_back(src);
  st->dsts.push_back(dst);
  if (rep_.platform->occupancy().enabled()) st->links.push_back(route);
  if (rep_.injector != nullptr) {
    st->routes.push_back(route);
    st->flow_bytes.push_back(bytes);
  }
  ++st->pending;
  ++rep_.activities_started;
  ActivityDispatch::start(a);
}

void SimExecutor::phase_done(Step* st) {
  if (st->send_folded) {  // the compute timer ended with the send
    st->send_folded = false;
    transfers_.unregister_fold(st, st->stage);
    stage_done(st, rep_.runtime->now());
    return;
  }
  if (st->phase == Step::Phase::kCompute && rep_.injector != nullptr) {
    if (!st->fault.ok() && st->status.ok()) st->status = std::move(st->fault);
    st->fault = ok_status();
    if (st->status.ok()) faults_.count_analytic_bytes(st);
  }
  if (!st->status.ok()) {
    stage_done(st, rep_.runtime->now());
    return;
  }
  const Stage& stage = rep_.stages[st->stage];
  const perf::StageCost& c = exec::stage_cost(st, st->stage);
  if (st->phase == Step::Phase::kCompute && exec::collective_flows_follow(stage, c))
    return transfers_.start_allreduce(st);
  if (st->phase != Step::Phase::kSend && exec::send_flow_follows(stage, c))
    return transfers_.start_send(st);
  stage_done(st, rep_.runtime->now());
}

void SimExecutor::stage_done(Step* st, double end_s) {
  Stage& stage = rep_.stages[st->stage];
  st->busy[st->stage] = end_s - st->stage_start_s;
  stage.busy = false;
  stage.free_at_s = end_s;
  // st enters the next stage right after this stage's next step started: until then that
  // stage counts as taken (free_at_s = infinity), so the step starting here cannot chain
  // into it ahead of st.
  const bool moves_on = st->status.ok() && st->stage + 1 < static_cast<int>(rep_.stages.size());
  double* next_free_at = moves_on ? &rep_.stages[st->stage + 1].free_at_s : nullptr;
  const double next_free_at_was = moves_on ? *next_free_at : 0;
  if (moves_on) *next_free_at = std::numeric_limits<double>::infinity();
  if (!stage.waiting.empty()) {
    Step* next = stage.waiting.front();
    stage.waiting.pop_front();
    start_stage(next);
  } else if (st->stage > 0) {
    // A deferred end of the previous stage: its step was next in this stage's queue.
    compute_.settle(rep_.stages[st->stage - 1]);
  }
  if (moves_on) {
    *next_free_at = next_free_at_was;
    ++st->stage;
    start_stage(st);
    return;
  }
  finish(st);
}

void SimExecutor::finish(Step* st) {
  // The result lives in result_ (its vector's storage reused: no allocation per step), or
  // in a local should a step finish inside another's done().
  StepResult local;
  const bool outer = !finishing_;
  StepResult& r = outer ? result_ : local;
  finishing_ = true;
  r.status = std::move(st->status);
  r.start_s = st->start_s;
  r.end_s = rep_.runtime->now();
  r.flops = 0;
  for (size_t s = 0; s < st->cost.stages.size() && s < rep_.stages.size(); ++s)
    r.flops += st->cost.stages[s].flops * static_cast<double>(rep_.stages[s].hosts.size());
  r.stage_busy_s.assign(st->busy.begin(), st->busy.end());
  closed_form_.finished(st);
  st->in_flight = false;
  auto done = std::move(st->done);
  release(st);
  if (done) done(r);
  if (outer) finishing_ = false;
}

void SimExecutor::on_end(Step* st, const sg4::Activity& a, bool ok) {
  if (rep_.platform->occupancy().enabled())
    for (size_t i = 0; i < st->acts.size() && i < st->links.size(); ++i)
      if (st->acts[i].get() == &a) {
        if (st->links[i] != nullptr) rep_.platform->occupancy().flow_ended(*st->links[i]);
        break;
      }
  if (ok && rep_.injector != nullptr) {
    for (size_t i = 0; i < st->acts.size() && i < st->routes.size(); ++i)
      if (st->acts[i].get() == &a && st->routes[i] != nullptr)
        rep_.injector->count_bytes(*st->routes[i], st->flow_bytes[i]);
  }
  if (!ok && st->status.ok()) {
    size_t i = 0;
    while (i < st->acts.size() && st->acts[i].get() != &a) ++i;
    std::string what;
    if (i < st->acts.size()) {
      if (st->dsts[i] == nullptr)
        what = st->srcs[i]->get_name() + " failed";
      else {
        std::string el = rep_.platform->first_failed_element(st->srcs[i], st->dsts[i]);
        what = "flow " + st->srcs[i]->get_name() + " -> " + st->dsts[i]->get_name() + " failed" +
               (el.empty() ? std::string() : " (" + el + " is down)");
      }
    } else {
      what = "an activity failed";
    }
    st->status = unavailable(
        "sim: " + what + " (replica " + std::to_string(rep_.placement.replica) + ", step " +
        std::to_string(st->step_id) + ", stage " + std::to_string(st->stage) + ")");
  }
  if (--st->pending > 0) return;
  activities_done(st);
}

void SimExecutor::activities_done(Step* st) {
  for (auto& p : st->acts) ActivityDispatch::retire(std::move(p));
  st->acts.clear();
  st->srcs.clear();
  st->dsts.clear();
  st->routes.clear();
  st->flow_bytes.clear();
  st->links.clear();
  st->lone_used = 0;
  phase_done(st);
}

}  // namespace prima::sim
