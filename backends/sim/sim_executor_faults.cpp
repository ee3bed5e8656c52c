// FaultHooks (see sim_executor_faults.h): transfer-level faults of a stage's collectives, the
// current NVLink figures for the analytic terms, byte counts, and the health probe.
#include "backends/sim/sim_executor_faults.h"

#include <algorithm>
#include <limits>
#include <simgrid/s4u.hpp>
#include <string>

namespace sg4 = simgrid::s4u;

namespace prima::sim::exec {

void FaultHooks::nvlink_now(const std::vector<sg4::Host*>& src, const std::vector<sg4::Host*>& dst,
                            double* bw, double* lat) const {
  // Data leaves each source through its NVLink's up half and enters each destination
  // through its down half: the slowest half sets the rate, the slowest latency the hops.
  double b = std::numeric_limits<double>::infinity(), l = 0;
  auto see = [&](const sg4::Link* half) {
    b = std::min(b, half->get_bandwidth());
    l = std::max(l, rep_.platform->adjusted_latency(half));
  };
  for (sg4::Host* h : src)
    see(rep_.platform->nvlink_of(h->get_data<HostInfo>()->device)->get_link_up());
  for (sg4::Host* h : dst)
    see(rep_.platform->nvlink_of(h->get_data<HostInfo>()->device)->get_link_down());
  *bw = b;
  *lat = l;
}

TransferFaults FaultHooks::stage_faults(const Stage& stage, const perf::StageCost& c) {
  TransferFaults out;
  const int tp = stage.tp_group;  // the ring of the first TP group stands for the others
  const bool allreduce = tp > 1 && c.allreduces > 0;
  const bool send = stage.next_lead != nullptr && c.send_bytes > 0;
  if (!allreduce && !send && c.alltoalls == 0) return out;
  // A peer that does not answer holds every collective of the stage (and the send's receiver).
  std::vector<DeviceId> gpus = rep_.placement.devices[stage.index];
  if (send) gpus.push_back(stage.next_lead->get_data<HostInfo>()->device);
  out = rep_.injector->collective_stall(gpus);
  if (out.fails) return out;
  // Inter-node transfers register memory with the NIC; ring flows run side by side.
  double ring_extra = 0;
  if (allreduce && !stage.tp_intra_node && c.allreduce_bytes > 0) {
    for (int i = 0; i < tp && !out.fails; ++i) {
      TransferFaults t = rep_.injector->transfer_attempts(stage.hosts[i], stage.hosts[(i + 1) % tp],
                                                          std::max(1, c.allreduces));
      ring_extra = std::max(ring_extra, t.extra_s);
      if (t.fails) {
        out.fails = true;
        out.code = t.code;
        out.reason = t.reason;
      }
    }
  }
  out.extra_s += ring_extra;
  if (send && !stage.send_intra_node && !out.fails) {
    TransferFaults t = rep_.injector->transfer_attempts(stage.lead, stage.next_lead);
    out.extra_s += t.extra_s;
    if (t.fails) {
      out.fails = true;
      out.code = t.code;
      out.reason = t.reason;
    }
  }
  if (out.fails)
    out.reason = "sim: " + out.reason + " (replica " + std::to_string(rep_.placement.replica) +
                 ", stage " + std::to_string(stage.index) + ")";
  return out;
}

void FaultHooks::count_analytic_bytes(const Step* st) {
  if (!rep_.injector->measuring()) return;
  const Stage& stage = rep_.stages[st->stage];
  if (st->nvl_allreduce_bytes > 0)
    for (sg4::Host* h : stage.hosts) {
      auto* nvl = rep_.platform->nvlink_of(h->get_data<HostInfo>()->device);
      rep_.injector->count_link_bytes(nvl->get_link_up(), st->nvl_allreduce_bytes);
      rep_.injector->count_link_bytes(nvl->get_link_down(), st->nvl_allreduce_bytes);
    }
  if (st->nvl_send_bytes > 0) {
    rep_.injector->count_link_bytes(
        rep_.platform->nvlink_of(stage.lead->get_data<HostInfo>()->device)->get_link_up(),
        st->nvl_send_bytes);
    rep_.injector->count_link_bytes(
        rep_.platform->nvlink_of(stage.next_lead->get_data<HostInfo>()->device)->get_link_down(),
        st->nvl_send_bytes);
  }
  if (st->ring_analytic_bytes > 0)
    for (const FlowPath& f : stage.ring)
      rep_.injector->count_bytes(f.links, st->ring_analytic_bytes);
  if (st->send_analytic_bytes > 0)
    rep_.injector->count_bytes(stage.send.links, st->send_analytic_bytes);
}

void FaultHooks::check_health(std::function<void(Status)> done) {
  auto name_faults = [](const std::string& labels) {
    return labels.empty() ? std::string() : " (fault " + labels + ")";
  };
  std::string bad;
  for (size_t s = 0; s < rep_.stages.size() && bad.empty(); ++s)
    for (size_t i = 0; i < rep_.stages[s].hosts.size() && bad.empty(); ++i)
      if (!rep_.stages[s].hosts[i]->is_on()) {
        const DeviceId d = rep_.placement.devices[s][i];
        bad = rep_.stages[s].hosts[i]->get_name() + " is down" +
              name_faults(rep_.injector ? rep_.injector->faults_downing_gpu(d) : "");
      }
  auto check_route = [&](sg4::Host* a, sg4::Host* b) {
    if (!bad.empty() || a == b) return;
    for (sg4::Link* l : rep_.platform->route(a, b))
      if (!l->is_on()) {
        bad = "link " + l->get_name() + " (" + a->get_name() + " -> " + b->get_name() +
              ") is down" + name_faults(rep_.injector ? rep_.injector->faults_downing_link(l) : "");
        return;
      }
  };
  for (const Stage& st : rep_.stages) {
    const int p = static_cast<int>(st.hosts.size());
    for (int i = 0; p > 1 && i < p; ++i) check_route(st.hosts[i], st.hosts[(i + 1) % p]);
    if (st.next_lead != nullptr) check_route(st.lead, st.next_lead);
  }
  if (!bad.empty()) {
    Status s =
        unavailable("health: replica " + std::to_string(rep_.placement.replica) + ": " + bad);
    rep_.runtime->post([done = std::move(done), s] { done(s); });
    return;
  }
  double stall = 0;
  if (rep_.injector != nullptr) {
    std::vector<DeviceId> all;
    for (const auto& d : rep_.placement.devices) all.insert(all.end(), d.begin(), d.end());
    // The probe waits for the peer as long as it stalls (the engine has its own timeout).
    stall = rep_.injector->unresponsive_stall_s(all);
  }
  if (stall > 0)
    rep_.runtime->at(rep_.runtime->now() + stall, [done = std::move(done)] { done(ok_status()); });
  else
    rep_.runtime->post([done = std::move(done)] { done(ok_status()); });
}

}  // namespace prima::sim::exec
