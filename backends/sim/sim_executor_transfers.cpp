// Transfers (see sim_executor_transfers.h): flow paths and their exclusivity, the analytic
// terms, ring and send flows, lone flows and folded sends. Thread-safety: simulation loop
// only, like the rest of the executor.
#include "backends/sim/sim_executor_transfers.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <simgrid/s4u.hpp>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "backends/sim/sim_executor.h"

namespace sg4 = simgrid::s4u;

namespace prima::sim::exec {

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

void LoneSend::convert(double now, double eps) {
  rep->transfers->convert_lone(this, now, eps);
}

// ---- Reference: flow paths, analytic terms, ring and send flows.

void Transfers::lay_out(Stage& st) {
  const int n = static_cast<int>(st.hosts.size()), tp = st.tp_group;
  const bool analytic = rep_.speedups.analytic_intra_node_collectives;
  st.ring_flows = tp > 1 && !(st.tp_intra_node && analytic);
  st.send_flow = st.next_lead != nullptr && !(st.send_intra_node && analytic);
  st.a2a_flows = st.all_to_all && !(st.ep_intra_node && analytic);
  if (st.ring_flows)
    for (int i = 0; i < n; ++i)
      st.ring.push_back(make_path(st.hosts[i], st.hosts[i - i % tp + (i % tp + 1) % tp]));
  if (st.send_flow) st.send = make_path(st.lead, st.next_lead);
  if (st.a2a_flows) {
    // Units: the stage's nodes (each node's first GPU stands for its GPUs: the flows meet on
    // the NICs), or its GPUs when the stage is inside one node.
    std::vector<std::pair<sg4::Host*, int>> units;
    for (sg4::Host* h : st.hosts) {
      const int node = h->get_data<HostInfo>()->node;
      if (!st.ep_intra_node && !units.empty() &&
          units.back().first->get_data<HostInfo>()->node == node)
        ++units.back().second;
      else
        units.push_back({h, 1});
    }
    for (const auto& a : units)
      for (const auto& b : units)
        if (a.first != b.first)
          st.a2a.push_back({make_path(a.first, b.first), a.first, b.first,
                            static_cast<double>(a.second) * b.second});
  }
}

FlowPath Transfers::make_path(sg4::Host* src, sg4::Host* dst) {
  FlowPath f;
  f.slot = rep_.platform->new_flow_slot();
  f.links = rep_.platform->route(src, dst);
  f.occ = rep_.platform->occupancy().route(f.links);
  rep_.platform->claim_links(f.slot, f.links);
  const bool inter = src->get_data<HostInfo>()->node != dst->get_data<HostInfo>()->node;
  const auto& settings = rep_.platform->topology().settings;
  const double bwf = inter ? inter_node_bandwidth_factor(settings) : 1.0;
  const double latf = inter ? inter_node_latency_factor(settings) : 1.0;
  double min_bw = std::numeric_limits<double>::infinity();
  for (const sg4::Link* l : f.links) min_bw = std::min(min_bw, l->get_bandwidth());
  f.latency_s = rep_.platform->route_latency(src, dst) * latf;
  // A factor above 1 would be capped by the links: keep such flows simulated (rate 0).
  f.rate_Bps = bwf <= 1.0 && !f.links.empty() ? min_bw * bwf : 0.0;
  return f;
}

double Transfers::stage_analytic_s(const Stage& stage, Step* st, const perf::StageCost& c) {
  const int tp = stage.tp_group;
  const plan::LinkSpec& nic = rep_.platform->topology().node.nic;

  double analytic_s = st->stage == 0 ? st->cost.overhead_s : 0.0;
  if (!st->fault.ok()) st->fault = ok_status();
  st->nvl_allreduce_bytes = st->nvl_send_bytes = 0;
  st->ring_analytic_bytes = st->send_analytic_bytes = 0;
  if (tp > 1 && c.allreduces > 0) {
    if (stage.tp_intra_node && rep_.speedups.analytic_intra_node_collectives) {
      double bw = rep_.nvlink.bandwidth_Bps, lat = rep_.nvlink.latency_s;
      if (rep_.injector != nullptr) {
        rep_.faults->nvlink_now(stage.hosts, stage.hosts, &bw, &lat);
        st->nvl_allreduce_bytes = 2.0 * (tp - 1) / tp * c.allreduce_bytes * c.allreduces;
      }
      analytic_s += c.allreduces * rep_.costs.allreduce_s(c.allreduce_bytes, tp, bw, lat);
    } else {
      const plan::LinkSpec& l = stage.tp_intra_node ? rep_.nvlink : nic;
      double lat = l.latency_s;
      if (rep_.injector != nullptr && !stage.tp_intra_node)
        for (sg4::Host* h : stage.hosts)
          lat = std::max(lat,
                         rep_.platform->adjusted_latency(
                             rep_.platform->nic_of(h->get_data<HostInfo>()->node)->get_link_up()));
      analytic_s += c.allreduces * rep_.costs.allreduce_s(0, tp, l.bandwidth_Bps, lat);
      if (stage.ring_analytic && c.allreduce_bytes > 0) {
        analytic_s += ring_analytic_s(stage, ring_flow_bytes(c, tp));
        st->ring_analytic_bytes = ring_flow_bytes(c, tp);
      }
    }
  }
  if (stage.all_to_all && c.alltoalls > 0) {
    const int g = static_cast<int>(stage.hosts.size());
    const int gpn = rep_.platform->topology().node.gpus;
    if (!stage.a2a_flows) {  // inside a node, on NVLink
      double bw = rep_.nvlink.bandwidth_Bps, lat = rep_.nvlink.latency_s;
      if (rep_.injector != nullptr) {
        rep_.faults->nvlink_now(stage.hosts, stage.hosts, &bw, &lat);
        st->nvl_allreduce_bytes += c.alltoall_bytes;
      }
      const plan::LinkSpec l{bw, lat};
      analytic_s += c.alltoalls * rep_.costs.alltoall_s(c.alltoall_bytes / c.alltoalls, g, g, l, l);
    } else {  // the flows carry the bytes; the latency terms ride here
      analytic_s += c.alltoalls *
                    rep_.costs.alltoall_s(0, g, stage.ep_intra_node ? g : gpn, rep_.nvlink, nic);
      if (stage.a2a_analytic && c.alltoall_bytes > 0)
        analytic_s += stage.a2a_latency_s + c.alltoall_bytes / (g - 1) * stage.a2a_s_per_pair;
    }
  }
  if (stage.next_lead != nullptr && c.send_bytes > 0) {
    if (stage.send_intra_node && rep_.speedups.analytic_intra_node_collectives) {
      double bw = rep_.nvlink.bandwidth_Bps, lat = rep_.nvlink.latency_s;
      if (rep_.injector != nullptr) {
        rep_.faults->nvlink_now({stage.lead}, {stage.next_lead}, &bw, &lat);
        st->nvl_send_bytes = c.send_bytes;
      }
      analytic_s += rep_.costs.send_s(c.send_bytes, bw, lat);
    } else {
      analytic_s += rep_.costs.send_s(0, 1.0, 0.0);
      if (stage.send_analytic) {
        analytic_s += stage.send.latency_s + send_flow_bytes(c) / stage.send.rate_Bps;
        st->send_analytic_bytes = send_flow_bytes(c);
      }
    }
  }
  if (rep_.injector != nullptr) {
    TransferFaults tf = rep_.faults->stage_faults(stage, c);
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

// SimGrid asserts that both ends of a Comm are on when it starts, and a Comm started over a
// link that is off never ends (not even once the link is back): a flow towards a GPU that
// went off (node failure) or across a link that is down fails the step at once instead,
// naming the host or link. Links only go down under a fault timeline (an injector).
bool Transfers::fail_if_down(Step* st, const std::vector<sg4::Host*>& hosts,
                             const std::vector<const std::vector<sg4::Link*>*>& paths) {
  std::string down;
  for (sg4::Host* h : hosts)
    if (down.empty() && h != nullptr && !h->is_on()) down = h->get_name();
  if (rep_.injector != nullptr)
    for (const auto* links : paths)
      for (sg4::Link* l : *links)
        if (down.empty() && !l->is_on()) down = "link " + l->get_name();
  if (down.empty()) return false;
  rep_.executor->fail_now(
      st, unavailable("sim: " + down + " is down (replica " +
                      std::to_string(rep_.placement.replica) + ", step " +
                      std::to_string(st->step_id) + ", stage " + std::to_string(st->stage) + ")"));
  return true;
}

void Transfers::start_allreduce(Step* st) {
  st->phase = Step::Phase::kAllreduce;
  const Stage& stage = rep_.stages[st->stage];
  const perf::StageCost& c = st->cost.stages[st->stage];
  const int n = static_cast<int>(stage.hosts.size()), tp = stage.tp_group;
  const bool ring = ring_flows_follow(stage, c), a2a = a2a_flows_follow(stage, c);
  std::vector<const std::vector<sg4::Link*>*> paths;
  if (rep_.injector != nullptr) {
    if (ring)
      for (const FlowPath& fp : stage.ring) paths.push_back(&fp.links);
    if (a2a)
      for (const Stage::A2aPath& ap : stage.a2a) paths.push_back(&ap.path.links);
  }
  if (fail_if_down(st, stage.hosts, paths)) return;
  if (ring) {
    const auto bytes = static_cast<uint64_t>(ring_flow_bytes(c, tp));
    for (int i = 0; i < n; ++i)
      start_flow(st, stage.ring[i], stage.hosts[i], stage.hosts[i - i % tp + (i % tp + 1) % tp],
                 static_cast<double>(bytes));
  }
  if (a2a) {
    // Each GPU's exchange spreads evenly over the stage's other GPUs.
    const double per_pair = c.alltoall_bytes / (n - 1);
    for (const Stage::A2aPath& ap : stage.a2a)
      start_flow(st, ap.path, ap.src, ap.dst,
                 static_cast<double>(static_cast<uint64_t>(per_pair * ap.pairs)));
  }
}

void Transfers::start_send(Step* st) {
  st->phase = Step::Phase::kSend;
  const Stage& stage = rep_.stages[st->stage];
  if (fail_if_down(st, {stage.lead, stage.next_lead}, {&stage.send.links})) return;
  const perf::StageCost& c = st->cost.stages[st->stage];
  start_flow(st, stage.send, stage.lead, stage.next_lead, send_flow_bytes(c));
}

void Transfers::start_flow(Step* st, const FlowPath& path, sg4::Host* src, sg4::Host* dst,
                           double bytes) {
  LinkOccupancy& occ = rep_.platform->occupancy();
  const double start = rep_.now();
  if (rep_.speedups.lone_flows && path.rate_Bps > 0 &&
      occ.idle(*path.occ, start, (start + path.latency_s) + bytes / path.rate_Bps)) {
    if (st->lone_used == static_cast<int>(st->lone.size())) {
      st->lone.push_back(std::make_unique<LoneSend>());
      st->lone.back()->rep = &rep_;
    }
    LoneSend* f = st->lone[static_cast<size_t>(st->lone_used++)].get();
    f->st = st;
    f->path = &path;
    f->route = path.occ;
    f->src = src;
    f->dst = dst;
    f->t0 = start;
    f->bytes = bytes;
    occ.add_lone(f);
    f->timer = rep_.runtime->at(f->end_s(), [this, f] { on_lone_end(f); });
    ++st->pending;
    ++rep_.activities_started;
    return;
  }
  // Reported whenever the platform tracks occupancy (even with this executor's lone flows
  // off): other executors' lone flows must see it.
  if (occ.enabled()) occ.flow_started(path.links, rep_.now(), path.latency_s);
  rep_.executor->track(
      st, sg4::Comm::sendto_init(src, dst)->set_payload_size(static_cast<uint64_t>(bytes)), src,
      dst, &path.links, bytes);
}

void Transfers::release_paths() {
  for (Stage& st : rep_.stages) {
    for (const FlowPath& f : st.ring) rep_.platform->release_links(f.slot, f.links);
    for (const Stage::A2aPath& a : st.a2a) rep_.platform->release_links(a.path.slot, a.path.links);
    if (st.send.slot >= 0) rep_.platform->release_links(st.send.slot, st.send.links);
  }
}

// ---- Exclusive links (exclusive_links_analytic).

void Transfers::refresh_exclusive() {
  claims_seen_ = rep_.platform->claims_version();
  auto exclusive = [&](const FlowPath& f) {
    return rep_.speedups.exclusive_links_analytic && f.rate_Bps > 0 &&
           rep_.platform->exclusive_to(f.slot, f.links);
  };
  auto reduce = [&](FlowPath& f) {
    f.occ = rep_.platform->occupancy().route(rep_.speedups.lone_flows_on_contention_links
                                                 ? rep_.platform->contention_links(f.slot, f.links)
                                                 : f.links);
  };
  for (Stage& st : rep_.stages) {
    refresh_a2a(st);
    st.ring_analytic = st.ring_flows && std::all_of(st.ring.begin(), st.ring.end(), exclusive);
    st.send_analytic = st.send_flow && exclusive(st.send);
    for (FlowPath& f : st.ring) reduce(f);
    for (Stage::A2aPath& a : st.a2a) reduce(a.path);
    if (st.send_flow) reduce(st.send);
  }
}

void Transfers::refresh_a2a(Stage& st) {
  st.a2a_analytic = false;
  if (!st.a2a_flows || st.a2a.empty() || !rep_.speedups.exclusive_links_analytic) return;
  // The stage's paths took consecutive slots (lay_out); each link's load is the pairs of the
  // paths crossing it over its bandwidth (x the path's bandwidth factor); the busiest link
  // ends the phase.
  const int first = st.a2a.front().path.slot, last = st.a2a.back().path.slot;
  std::unordered_map<const sg4::Link*, double> load;
  double latency = 0;
  for (const Stage::A2aPath& ap : st.a2a) {
    const FlowPath& f = ap.path;
    if (!(f.rate_Bps > 0) || !rep_.platform->exclusive_to_range(first, last, f.links)) return;
    double min_bw = std::numeric_limits<double>::infinity();
    for (const sg4::Link* l : f.links) min_bw = std::min(min_bw, l->get_bandwidth());
    const double factor = f.rate_Bps / min_bw;
    for (const sg4::Link* l : f.links) load[l] += ap.pairs / (l->get_bandwidth() * factor);
    latency = std::max(latency, f.latency_s);
  }
  double worst = 0;
  for (const auto& [l, s] : load) worst = std::max(worst, s);
  st.a2a_analytic = true;
  st.a2a_s_per_pair = worst;
  st.a2a_latency_s = latency;
}

double Transfers::ring_analytic_s(const Stage& stage, double bytes_per_flow) const {
  // The flows run side by side, each alone on its links: the phase lasts the slowest.
  double t = 0;
  for (const FlowPath& f : stage.ring) t = std::max(t, f.latency_s + bytes_per_flow / f.rate_Bps);
  return t;
}

// ---- Lone flows (lone_flows).

void Transfers::on_lone_end(LoneSend* f) {
  f->timer = kNoTimer;  // fired
  rep_.platform->occupancy().remove_lone(f);
  Step* st = f->st;
  if (--st->pending > 0) return;
  rep_.executor->activities_done(st);
}

void Transfers::convert_lone(LoneSend* f, double now, double eps) {
  const FlowPath& p = *f->path;
  const double latency_end = f->t0 + p.latency_s;
  // Ending within eps: the newcomer is still in its latency phase until then, so this flow
  // ends alone, as planned.
  if (f->end_s() <= now + eps) return;
  rep_.runtime->cancel(f->timer);
  f->timer = kNoTimer;
  --f->st->pending;  // the Comm counts instead
  --rep_.activities_started;
  continue_as_comm(f->st, p, f->src, f->dst, latency_end, f->bytes, now, eps);
}

void Transfers::continue_as_comm(Step* st, const FlowPath& p, sg4::Host* src, sg4::Host* dst,
                                 double latency_end, double bytes, double now, double eps) {
  // The rest of its latency phase, or eps; the bytes a lone flow would not have sent by then.
  const double latency = std::max(latency_end - now, eps);
  const double sent = std::max(0.0, (now + latency - latency_end) * p.rate_Bps);
  const double left = std::max(1.0, std::round(bytes - sent));
  rep_.platform->occupancy().flow_started(p.links, now, latency);
  rep_.platform->set_next_comm_latency(latency);
  rep_.executor->track(
      st, sg4::Comm::sendto_init(src, dst)->set_payload_size(static_cast<uint64_t>(left)), src, dst,
      &p.links, left);
  if (rep_.platform->comm_latency_override_pending()) {
    rep_.platform->set_next_comm_latency(0);
    throw std::logic_error("sim: a converted lone flow did not get its latency (no callback)");
  }
}

void Transfers::cancel_lone(Step* x) {
  for (const auto& f : x->lone)
    if (f->timer != kNoTimer) {
      rep_.platform->occupancy().remove_lone(f.get());
      rep_.runtime->cancel(f->timer);
    }
}

// ---- Folded sends (lone_flows).

double Transfers::fold_send(Stage& stage, Step* st, const perf::StageCost& c,
                            double compute_flops) {
  if (collective_flows_follow(stage, c) || !send_flow_follows(stage, c) ||
      !(stage.send.rate_Bps > 0) || !(stage.lead_speed > 0))
    return -1;
  const double folded = register_fold(stage, st, c, rep_.now(), compute_flops);
  if (folded >= 0) st->send_folded = true;
  return folded;
}

double Transfers::register_fold(Stage& stage, Step* x, const perf::StageCost& c, double start,
                                double compute_flops) {
  FoldedSend& f = x->folds[static_cast<std::size_t>(stage.index)];
  f.rep = &rep_;
  f.st = x;
  f.path = &stage.send;
  f.route = stage.send.occ;
  f.stage = stage.index;
  f.compute_flops = compute_flops;
  f.send_start_s = start + compute_flops / stage.lead_speed;           // start_timer's end
  f.bytes = static_cast<double>(static_cast<uint64_t>(c.send_bytes));  // as start_send
  LinkOccupancy& occ = rep_.platform->occupancy();
  if (!occ.idle(*f.path->occ, f.send_start_s, f.lone_end_s())) return -1;
  occ.add_lone(&f);
  x->folds_registered |= 1u << stage.index;
  return compute_flops + (f.lone_end_s() - f.send_start_s) * stage.lead_speed;
}

void Transfers::unfold_send(FoldedSend* f, double now, double eps) {
  Step* st = f->st;
  Stage& stage = rep_.stages[static_cast<size_t>(st->stage)];
  const double end = f->lone_end_s();
  if (now < f->send_start_s) {
    // Still computing: the timer ends with the compute, and the send decides again then.
    st->send_folded = false;
    stage.remaining_flops = f->compute_flops;  // since_s and rate unchanged: ends at the start
    rep_.compute->arm_timer(stage);
    return;
  }
  if (end <= now + eps) return;  // ends alone, as planned (see convert_lone)
  // Sending: the rest as a SimGrid flow, as a converting lone flow.
  st->send_folded = false;
  rep_.runtime->cancel(stage.timer);
  stage.timer = kNoTimer;
  stage.timed = nullptr;
  st->phase = Step::Phase::kSend;
  continue_as_comm(st, *f->path, stage.lead, stage.next_lead, f->send_start_s + f->path->latency_s,
                   f->bytes, now, eps);
}

void Transfers::unregister_fold(Step* x, int stage) {
  const std::uint32_t bit = 1u << stage;
  if ((x->folds_registered & bit) == 0) return;
  rep_.platform->occupancy().remove_lone(&x->folds[static_cast<std::size_t>(stage)]);
  x->folds_registered &= ~bit;
}

void Transfers::unregister_folds(Step* x) {
  while (x->folds_registered != 0) unregister_fold(x, __builtin_ctz(x->folds_registered));
}

}  // namespace prima::sim::exec
