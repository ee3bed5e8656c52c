#include "backends/sim/sim_executor.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <simgrid/s4u.hpp>
#include <stdexcept>

#include "backends/sim/activity_dispatch.h"
#include "backends/sim/sim_executor_step.h"

namespace sg4 = simgrid::s4u;

namespace prima::sim {

namespace {
// Payload of each ring flow of a flow-modelled all-reduce, and of a PP send flow (whole bytes,
// as the flows carry them).
double ring_flow_bytes(const perf::StageCost& c, int p) {
  return static_cast<double>(
      static_cast<uint64_t>(2.0 * (p - 1) / p * c.allreduce_bytes * c.allreduces));
}
double send_flow_bytes(const perf::StageCost& c) {
  return static_cast<double>(static_cast<uint64_t>(c.send_bytes));
}
}  // namespace

SimCostFns default_cost_fns(std::function<perf::StepCost(const BatchShape&)> step) {
  SimCostFns f;
  f.step = std::move(step);
  f.allreduce_s = [](double bytes, int p, double bw, double lat) {
    if (p <= 1) return 0.0;
    return 2.0 * (p - 1) / p * bytes / bw + 2.0 * (p - 1) * lat;
  };
  f.send_s = [](double bytes, double bw, double lat) { return bytes / bw + lat; };
  return f;
}

SimExecutor::SimExecutor(SimPlatform* platform, Runtime* runtime, plan::ReplicaPlacement placement,
                         SimCostFns costs, SimSpeedups speedups)
    : platform_(platform),
      runtime_(runtime),
      placement_(std::move(placement)),
      costs_(std::move(costs)),
      speedups_(speedups),
      nvlink_(platform->topology().node.nvlink) {
  if (speedups_.lone_flows && !platform_->occupancy().enabled())
    throw std::logic_error(
        "sim: lone_flows without the platform's link occupancy "
        "(SimPlatform::enable_lone_flows)");
  const auto& topo = platform_->topology();
  const auto& dev = placement_.devices;
  stages_.resize(dev.size());
  for (size_t s = 0; s < dev.size(); ++s) {
    Stage& st = stages_[s];
    st.index = static_cast<int>(s);
    for (DeviceId d : dev[s]) st.hosts.push_back(platform_->host_of(d));
    st.lead = st.hosts.at(0);
    const int node = topo.node_of(dev[s][0]);
    st.tp_intra_node = std::all_of(dev[s].begin(), dev[s].end(),
                                   [&](DeviceId d) { return topo.node_of(d) == node; });
    if (s + 1 < dev.size()) {
      st.next_lead = platform_->host_of(dev[s + 1].at(0));
      st.send_intra_node = topo.node_of(dev[s + 1][0]) == node;
    }
    const int p = static_cast<int>(st.hosts.size());
    st.ring_flows = p > 1 && !(st.tp_intra_node && speedups_.analytic_intra_node_collectives);
    st.send_flow = st.next_lead != nullptr &&
                   !(st.send_intra_node && speedups_.analytic_intra_node_collectives);
    if (st.ring_flows)
      for (int i = 0; i < p; ++i) st.ring.push_back(make_path(st.hosts[i], st.hosts[(i + 1) % p]));
    if (st.send_flow) st.send = make_path(st.lead, st.next_lead);
  }
  for (const auto& d : dev)
    for (DeviceId g : d) platform_->watch_host(g, this);
}

SimExecutor::~SimExecutor() {
  for (const auto& d : placement_.devices)
    for (DeviceId g : d) platform_->unwatch_host(g, this);
  for (Stage& st : stages_) {
    runtime_->cancel(st.timer);
    st.timer = kNoTimer;
    runtime_->cancel(st.free_timer);
    st.free_timer = kNoTimer;
    for (const FlowPath& f : st.ring) platform_->release_links(f.slot, f.links);
    if (st.send.slot >= 0) platform_->release_links(st.send.slot, st.send.links);
  }
  for (const auto& st : all_steps_) {
    runtime_->cancel(st->timer);
    for (const auto& f : st->lone)
      if (f->timer != kNoTimer) {
        platform_->occupancy().remove_lone(f.get());
        runtime_->cancel(f->timer);
      }
    unregister_folds(st.get());
  }
}

void SimExecutor::set_fault_injector(FaultInjector* injector) {
  // Speed-ups that assume GPUs and links never change (sim_strategy.h).
  if (injector != nullptr && (speedups_.chain_stages || speedups_.lone_flows))
    throw std::logic_error("sim: chained stages or lone flows under a fault timeline");
  injector_ = injector;
}

SimExecutor::FlowPath SimExecutor::make_path(sg4::Host* src, sg4::Host* dst) {
  FlowPath f;
  f.slot = platform_->new_flow_slot();
  f.links = platform_->route(src, dst);
  f.occ = platform_->occupancy().route(f.links);
  platform_->claim_links(f.slot, f.links);
  const bool inter = src->get_data<HostInfo>()->node != dst->get_data<HostInfo>()->node;
  const auto& settings = platform_->topology().settings;
  const double bwf = inter ? inter_node_bandwidth_factor(settings) : 1.0;
  const double latf = inter ? inter_node_latency_factor(settings) : 1.0;
  double min_bw = std::numeric_limits<double>::infinity();
  for (const sg4::Link* l : f.links) min_bw = std::min(min_bw, l->get_bandwidth());
  f.latency_s = platform_->route_latency(src, dst) * latf;
  // A factor above 1 would be capped by the links: keep such flows simulated (rate 0).
  f.rate_Bps = bwf <= 1.0 && !f.links.empty() ? min_bw * bwf : 0.0;
  return f;
}

void SimExecutor::refresh_exclusive() {
  claims_seen_ = platform_->claims_version();
  auto exclusive = [&](const FlowPath& f) {
    return speedups_.exclusive_links_analytic && f.rate_Bps > 0 &&
           platform_->exclusive_to(f.slot, f.links);
  };
  auto reduce = [&](FlowPath& f) {
    f.occ = platform_->occupancy().route(speedups_.lone_flows_on_contention_links
                                             ? platform_->contention_links(f.slot, f.links)
                                             : f.links);
  };
  for (Stage& st : stages_) {
    st.ring_analytic = st.ring_flows && std::all_of(st.ring.begin(), st.ring.end(), exclusive);
    st.send_analytic = st.send_flow && exclusive(st.send);
    for (FlowPath& f : st.ring) reduce(f);
    if (st.send_flow) reduce(st.send);
  }
}

double SimExecutor::ring_analytic_s(const Stage& stage, double bytes_per_flow) const {
  // The flows run side by side, each alone on its links: the phase lasts the slowest.
  double t = 0;
  for (const FlowPath& f : stage.ring) t = std::max(t, f.latency_s + bytes_per_flow / f.rate_Bps);
  return t;
}

SimExecutor::Step* SimExecutor::acquire() {
  if (free_steps_.empty()) {
    all_steps_.push_back(std::make_unique<Step>());
    all_steps_.back()->ex = this;
    Step& st = *all_steps_.back();
    st.folds.resize(stages_.size());  // once: registered sends keep their address
    st.t_start.resize(stages_.size());
    st.t_end.resize(stages_.size());
    st.t_flops.resize(stages_.size());
    return all_steps_.back().get();
  }
  Step* st = free_steps_.back();
  free_steps_.pop_back();
  return st;
}

void SimExecutor::release(Step* st) {
  st->done = nullptr;
  free_steps_.push_back(st);
}

void SimExecutor::launch(const StepPlan& step, std::function<void(const StepResult&)> done) {
  Step* st = acquire();
  if (platform_->claims_version() != claims_seen_) refresh_exclusive();
  st->step_id = step.step_id;
  if (costs_.step_into)
    costs_.step_into(step.shape, &st->cost);
  else
    st->cost = costs_.step(step.shape);
  st->done = std::move(done);
  st->stage = 0;
  st->pending = 0;
  st->status = ok_status();
  st->start_s = runtime_->now();
  st->busy.assign(stages_.size(), 0.0);
  st->folds_planned = 0;
  st->launch_seq = ++launches_;
  st->timed_at_launch = false;
  // st joins the steps in flight (in_flight) once timed or started: until then
  // try_promote and materialize see only the others.
  if (try_time_at_launch(st)) {
    st->in_flight = true;
    return;
  }
  // With closed_form_sends, steps timed at launch never run beside event-driven ones: those in
  // flight continue event-driven, ahead of st.
  if (speedups_.closed_form_sends) materialize(runtime_->now());
  ++event_driven_inflight_;
  st->in_flight = true;
  start_stage(st);
}

void SimExecutor::start_stage(Step* st) {
  Stage& stage = stages_[st->stage];
  if (stage.deferred) settle(stage);  // a step arrives: the stage's end is an event again
  if (stage.busy) {
    stage.waiting.push_back(st);
    return;
  }
  if (stage.free_at_s > now() && stage.waiting.empty() && runs_as_timer(stage, st)) {
    // Its last step left it ahead of the clock (chained): st starts there then, in the
    // executor's own time, as it would from the queue.
    const double saved = virtual_now_;
    virtual_now_ = stage.free_at_s;
    stage.busy = true;
    st->stage_start_s = now();
    if (st->stage == 0) st->start_s = st->stage_start_s;
    start_compute(st);
    virtual_now_ = saved;
    return;
  }
  if (stage.free_at_s > now()) {  // its last step left it ahead of the clock (chained)
    stage.waiting.push_back(st);
    if (stage.free_timer == kNoTimer) {
      Stage* sp = &stage;
      stage.free_timer = runtime_->at(stage.free_at_s, [this, sp] { on_free(*sp); });
    }
    return;
  }
  stage.busy = true;
  st->stage_start_s = now();
  if (st->stage == 0) st->start_s = st->stage_start_s;
  start_compute(st);
}

void SimExecutor::fail_now(Step* st, Status s) {
  if (st->status.ok()) st->status = std::move(s);
  // Not from inside launch(): report on the loop.
  runtime_->at(runtime_->now(), [this, st] { phase_done(st); });
}

void SimExecutor::track(Step* st, sg4::ActivityPtr a, sg4::Host* src, sg4::Host* dst,
                        const std::vector<sg4::Link*>* route, double bytes) {
  a->set_data(static_cast<CompletionTarget*>(st));
  st->acts.push_back(a);
  st->srcs.push_back(src);
  st->dsts.push_back(dst);
  if (platform_->occupancy().enabled()) st->links.push_back(route);
  if (injector_ != nullptr) {
    st->routes.push_back(route);
    st->flow_bytes.push_back(bytes);
  }
  ++st->pending;
  ++activities_started_;
  ActivityDispatch::start(a);
}

const perf::StageCost& SimExecutor::stage_cost(const Step* st, int s) {
  static const perf::StageCost kNone;
  return s < static_cast<int>(st->cost.stages.size()) ? st->cost.stages[s] : kNone;
}

double SimExecutor::stage_analytic_s(const Stage& stage, Step* st, const perf::StageCost& c) {
  const int tp = static_cast<int>(stage.hosts.size());
  const plan::LinkSpec& nic = platform_->topology().node.nic;

  double analytic_s = st->stage == 0 ? st->cost.overhead_s : 0.0;
  if (!st->fault.ok()) st->fault = ok_status();
  st->nvl_allreduce_bytes = st->nvl_send_bytes = 0;
  st->ring_analytic_bytes = st->send_analytic_bytes = 0;
  if (tp > 1 && c.allreduces > 0) {
    if (stage.tp_intra_node && speedups_.analytic_intra_node_collectives) {
      double bw = nvlink_.bandwidth_Bps, lat = nvlink_.latency_s;
      if (injector_ != nullptr) {
        nvlink_now(stage.hosts, stage.hosts, &bw, &lat);
        st->nvl_allreduce_bytes = 2.0 * (tp - 1) / tp * c.allreduce_bytes * c.allreduces;
      }
      analytic_s += c.allreduces * costs_.allreduce_s(c.allreduce_bytes, tp, bw, lat);
    } else {
      const plan::LinkSpec& l = stage.tp_intra_node ? nvlink_ : nic;
      double lat = l.latency_s;
      if (injector_ != nullptr && !stage.tp_intra_node)
        for (sg4::Host* h : stage.hosts)
          lat = std::max(lat, platform_->adjusted_latency(
                                  platform_->nic_of(h->get_data<HostInfo>()->node)->get_link_up()));
      analytic_s += c.allreduces * costs_.allreduce_s(0, tp, l.bandwidth_Bps, lat);
      if (stage.ring_analytic && c.allreduce_bytes > 0) {
        analytic_s += ring_analytic_s(stage, ring_flow_bytes(c, tp));
        st->ring_analytic_bytes = ring_flow_bytes(c, tp);
      }
    }
  }
  if (stage.next_lead != nullptr && c.send_bytes > 0) {
    if (stage.send_intra_node && speedups_.analytic_intra_node_collectives) {
      double bw = nvlink_.bandwidth_Bps, lat = nvlink_.latency_s;
      if (injector_ != nullptr) {
        nvlink_now({stage.lead}, {stage.next_lead}, &bw, &lat);
        st->nvl_send_bytes = c.send_bytes;
      }
      analytic_s += costs_.send_s(c.send_bytes, bw, lat);
    } else {
      analytic_s += costs_.send_s(0, 1.0, 0.0);
      if (stage.send_analytic) {
        analytic_s += stage.send.latency_s + send_flow_bytes(c) / stage.send.rate_Bps;
        st->send_analytic_bytes = send_flow_bytes(c);
      }
    }
  }
  if (injector_ != nullptr) {
    TransferFaults tf = stage_faults(stage, c);
    if (tf.fails) {  // the collectives never run: the stage fails after its compute + extra_s
      analytic_s = (st->stage == 0 ? st->cost.overhead_s : 0.0) + tf.extra_s;
      st->nvl_allreduce_bytes = st->nvl_send_bytes = 0;
      st->ring_analytic_bytes = st->send_analytic_bytes = 0;
    } else {
      analytic_s += tf.extra_s;
    }
    st->fault = tf.status();
  }
  return analytic_s;
}

void SimExecutor::start_compute(Step* st) {
  st->phase = Step::Phase::kCompute;
  Stage& stage = stages_[st->stage];
  const perf::StageCost& c = stage_cost(st, st->stage);
  const double analytic_s = stage_analytic_s(stage, st, c);
  if (!stage.hosts_known) refresh_hosts(stage);
  if (sg4::Host* h = stage.down) {
    fail_now(st, unavailable("sim: " + h->get_name() + " is down (replica " +
                             std::to_string(placement_.replica) + ", step " +
                             std::to_string(st->step_id) + ", stage " + std::to_string(st->stage) +
                             ")"));
    return;
  }
  const double nominal = platform_->nominal_speed();
  if (speedups_.aggregate_stage_execs) {
    const double slowest = stage.slowest_speed;
    const double lead = stage.lead_speed;
    const double flops = c.compute_s * nominal * (lead / slowest) + analytic_s * lead;
    const bool flows_follow =
        (stage.ring_flows && !stage.ring_analytic && c.allreduces > 0 && c.allreduce_bytes > 0) ||
        (stage.send_flow && !stage.send_analytic && c.send_bytes > 0);
    // With lone flows, the timer's end starts the flows (phase_done) as the Exec's would,
    // or the send rides on the timer while its links stay free (fold_send).
    if (speedups_.timer_stages && (!flows_follow || lone_flows())) {
      const double folded = flows_follow ? fold_send(stage, st, c, std::max(0.0, flops)) : -1;
      start_timer(stage, st, folded >= 0 ? folded : std::max(0.0, flops), flows_follow);
      return;
    }
    track(st, sg4::Exec::init()->set_host(stage.lead)->set_flops_amount(std::max(0.0, flops)),
          stage.lead, nullptr);
  } else {
    for (sg4::Host* h : stage.hosts) {
      const double flops = c.compute_s * nominal + analytic_s * SimPlatform::current_speed(h);
      track(st, sg4::Exec::init()->set_host(h)->set_flops_amount(std::max(0.0, flops)), h, nullptr);
    }
  }
}

// SimGrid asserts that both ends of a Comm are on when it starts, and a Comm started over a
// link that is off never ends (not even once the link is back): a flow towards a GPU that
// went off (node failure) or across a link that is down fails the step at once instead,
// naming the host or link. Links only go down under a fault timeline (an injector).
bool SimExecutor::fail_if_down(Step* st, const std::vector<sg4::Host*>& hosts,
                               const std::vector<const std::vector<sg4::Link*>*>& paths) {
  std::string down;
  for (sg4::Host* h : hosts)
    if (down.empty() && h != nullptr && !h->is_on()) down = h->get_name();
  if (injector_ != nullptr)
    for (const auto* links : paths)
      for (sg4::Link* l : *links)
        if (down.empty() && !l->is_on()) down = "link " + l->get_name();
  if (down.empty()) return false;
  fail_now(st,
           unavailable("sim: " + down + " is down (replica " + std::to_string(placement_.replica) +
                       ", step " + std::to_string(st->step_id) + ", stage " +
                       std::to_string(st->stage) + ")"));
  return true;
}

void SimExecutor::start_allreduce(Step* st) {
  st->phase = Step::Phase::kAllreduce;
  const Stage& stage = stages_[st->stage];
  const perf::StageCost& c = st->cost.stages[st->stage];
  const int p = static_cast<int>(stage.hosts.size());
  std::vector<const std::vector<sg4::Link*>*> paths;
  if (injector_ != nullptr)
    for (const FlowPath& fp : stage.ring) paths.push_back(&fp.links);
  if (fail_if_down(st, stage.hosts, paths)) return;
  const auto bytes = static_cast<uint64_t>(ring_flow_bytes(c, p));
  for (int i = 0; i < p; ++i)
    start_flow(st, stage.ring[i], stage.hosts[i], stage.hosts[(i + 1) % p],
               static_cast<double>(bytes));
}

void SimExecutor::start_send(Step* st) {
  st->phase = Step::Phase::kSend;
  const Stage& stage = stages_[st->stage];
  if (fail_if_down(st, {stage.lead, stage.next_lead}, {&stage.send.links})) return;
  const perf::StageCost& c = st->cost.stages[st->stage];
  start_flow(st, stage.send, stage.lead, stage.next_lead, send_flow_bytes(c));
}

void SimExecutor::on_end(Step* st, const sg4::Activity& a, bool ok) {
  if (platform_->occupancy().enabled())
    for (size_t i = 0; i < st->acts.size() && i < st->links.size(); ++i)
      if (st->acts[i].get() == &a) {
        if (st->links[i] != nullptr) platform_->occupancy().flow_ended(*st->links[i]);
        break;
      }
  if (ok && injector_ != nullptr) {
    for (size_t i = 0; i < st->acts.size() && i < st->routes.size(); ++i)
      if (st->acts[i].get() == &a && st->routes[i] != nullptr)
        injector_->count_bytes(*st->routes[i], st->flow_bytes[i]);
  }
  if (!ok && st->status.ok()) {
    size_t i = 0;
    while (i < st->acts.size() && st->acts[i].get() != &a) ++i;
    std::string what;
    if (i < st->acts.size()) {
      if (st->dsts[i] == nullptr)
        what = st->srcs[i]->get_name() + " failed";
      else {
        std::string el = platform_->first_failed_element(st->srcs[i], st->dsts[i]);
        what = "flow " + st->srcs[i]->get_name() + " -> " + st->dsts[i]->get_name() + " failed" +
               (el.empty() ? std::string() : " (" + el + " is down)");
      }
    } else {
      what = "an activity failed";
    }
    st->status =
        unavailable("sim: " + what + " (replica " + std::to_string(placement_.replica) + ", step " +
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

void SimExecutor::phase_done(Step* st) {
  if (st->send_folded) {  // the compute timer ended with the send
    st->send_folded = false;
    unregister_fold(st, st->stage);
    stage_done(st, runtime_->now());
    return;
  }
  if (st->phase == Step::Phase::kCompute && injector_ != nullptr) {
    if (!st->fault.ok() && st->status.ok()) st->status = std::move(st->fault);
    st->fault = ok_status();
    if (st->status.ok()) count_analytic_bytes(st);
  }
  if (!st->status.ok()) {
    stage_done(st, runtime_->now());
    return;
  }
  const Stage& stage = stages_[st->stage];
  const perf::StageCost* c =
      st->stage < static_cast<int>(st->cost.stages.size()) ? &st->cost.stages[st->stage] : nullptr;
  const bool flow_allreduce = c != nullptr && stage.ring_flows && !stage.ring_analytic &&
                              c->allreduces > 0 && c->allreduce_bytes > 0;
  const bool flow_send =
      c != nullptr && stage.send_flow && !stage.send_analytic && c->send_bytes > 0;
  if (st->phase == Step::Phase::kCompute && flow_allreduce) return start_allreduce(st);
  if (st->phase != Step::Phase::kSend && flow_send) return start_send(st);
  stage_done(st, runtime_->now());
}

void SimExecutor::stage_done(Step* st, double end_s) {
  Stage& stage = stages_[st->stage];
  st->busy[st->stage] = end_s - st->stage_start_s;
  stage.busy = false;
  stage.free_at_s = end_s;
  // st enters the next stage right after this stage's next step started: until then that
  // stage counts as taken (free_at_s = infinity), so the step starting here cannot chain
  // into it ahead of st.
  const bool moves_on = st->status.ok() && st->stage + 1 < static_cast<int>(stages_.size());
  double* next_free_at = moves_on ? &stages_[st->stage + 1].free_at_s : nullptr;
  const double next_free_at_was = moves_on ? *next_free_at : 0;
  if (moves_on) *next_free_at = std::numeric_limits<double>::infinity();
  if (!stage.waiting.empty()) {
    Step* next = stage.waiting.front();
    stage.waiting.pop_front();
    start_stage(next);
  } else if (st->stage > 0) {
    // A deferred end of the previous stage: its step was next in this stage's queue.
    settle(stages_[st->stage - 1]);
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
  r.end_s = runtime_->now();
  r.flops = 0;
  for (size_t s = 0; s < st->cost.stages.size() && s < stages_.size(); ++s)
    r.flops += st->cost.stages[s].flops * static_cast<double>(stages_[s].hosts.size());
  r.stage_busy_s.assign(st->busy.begin(), st->busy.end());
  if (!st->timed_at_launch) --event_driven_inflight_;
  st->in_flight = false;
  auto done = std::move(st->done);
  release(st);
  if (done) done(r);
  if (outer) finishing_ = false;
}

void SimExecutor::count_analytic_bytes(const Step* st) {
  if (!injector_->measuring()) return;
  const Stage& stage = stages_[st->stage];
  if (st->nvl_allreduce_bytes > 0)
    for (sg4::Host* h : stage.hosts) {
      auto* nvl = platform_->nvlink_of(h->get_data<HostInfo>()->device);
      injector_->count_link_bytes(nvl->get_link_up(), st->nvl_allreduce_bytes);
      injector_->count_link_bytes(nvl->get_link_down(), st->nvl_allreduce_bytes);
    }
  if (st->nvl_send_bytes > 0) {
    injector_->count_link_bytes(
        platform_->nvlink_of(stage.lead->get_data<HostInfo>()->device)->get_link_up(),
        st->nvl_send_bytes);
    injector_->count_link_bytes(
        platform_->nvlink_of(stage.next_lead->get_data<HostInfo>()->device)->get_link_down(),
        st->nvl_send_bytes);
  }
  if (st->ring_analytic_bytes > 0)
    for (const FlowPath& f : stage.ring) injector_->count_bytes(f.links, st->ring_analytic_bytes);
  if (st->send_analytic_bytes > 0)
    injector_->count_bytes(stage.send.links, st->send_analytic_bytes);
}

}  // namespace prima::sim
