// FaultInjector, part 1: fault windows applied to the platform (links, hosts). Transfer-level
// faults, timeline and byte counters: fault_observers.cpp.
#include "backends/sim/fault_injector.h"

#include <algorithm>
#include <set>

#include "backends/sim/fault_injector_impl.h"
#include "backends/sim/thermal_model.h"

namespace sg4 = simgrid::s4u;

namespace prima::sim {

using faults::FaultType;
using Kind = faults::FaultTarget::Kind;

int FaultInjector::Impl::link_el(sg4::Link* l) {
  auto [it, fresh] = link_index.emplace(l, static_cast<int>(links.size()));
  if (fresh) {
    LinkEl e;
    e.link = l;
    e.base_bw = l->get_bandwidth();
    e.applied_bw = e.base_bw;
    links.push_back(e);
  }
  return it->second;
}

int FaultInjector::Impl::host_el(DeviceId d) {
  if (host_index.at(d) < 0) {
    host_index[d] = static_cast<int>(hosts.size());
    HostEl e;
    e.device = d;
    hosts.push_back(e);
  }
  return host_index[d];
}

std::vector<sg4::Link*> FaultInjector::Impl::halves(sg4::SplitDuplexLink* l) const {
  if (l == nullptr) return {};
  return {l->get_link_up(), l->get_link_down()};
}

std::vector<sg4::Link*> FaultInjector::Impl::target_links(const faults::FaultTarget& t) const {
  if (t.kind == Kind::kNic) return halves(platform->nic_of(t.index));
  if (t.kind == Kind::kStorage) return {platform->storage_link()};
  if (t.kind != Kind::kLink) return {};
  const std::string& n = t.link;
  auto ends = [&](const std::string& suf) {
    return n.size() > suf.size() && n.compare(n.size() - suf.size(), suf.size(), suf) == 0;
  };
  if (n == "storage_link") return {platform->storage_link()};
  if (n.rfind("gpu", 0) == 0) return halves(platform->nvlink_of(t.index));
  if (ends("_nic")) return halves(platform->nic_of(t.index));
  if (ends("_pcie")) return halves(platform->pcie_of(t.index));
  return {};
}

void FaultInjector::Impl::add_meter(const std::string& name, std::vector<sg4::Link*> hs) {
  const std::string col = "util_" + name;
  for (const Meter& m : meters)
    if (m.column == col) return;
  Meter m;
  m.column = col;
  for (sg4::Link* l : hs) {
    meter_of[l] = {static_cast<int>(meters.size()), static_cast<int>(m.halves.size())};
    m.halves.push_back(l);
    m.nominal_Bps.push_back(l->get_bandwidth());
    m.bytes.push_back(0);
  }
  if (!m.halves.empty()) meters.push_back(std::move(m));
}

FaultInjector::FaultInjector(SimPlatform* platform, Runtime* runtime,
                             std::vector<faults::FaultSpec> faults, faults::CommEnv env,
                             std::uint64_t seed)
    : impl_(std::make_unique<Impl>()), faults_(std::move(faults)), env_(env) {
  Impl& m = *impl_;
  m.platform = platform;
  m.runtime = runtime;
  m.rng.seed(seed);
  m.host_index.assign(platform->num_gpus(), -1);
  const plan::Topology& topo = platform->topology();
  auto nic_halves = [&](int node) { return m.halves(platform->nic_of(node)); };
  std::set<int> thermal_nodes;
  std::vector<std::pair<std::string, std::vector<sg4::Link*>>> targeted;  // measured links
  for (const faults::FaultSpec& f : faults_) {
    Impl::FaultEl e;
    e.nodes = f.target.nodes(topo);
    switch (f.type) {
      case FaultType::kThermal:
        m.has_thermal = true;
        for (int n : e.nodes) {
          thermal_nodes.insert(n);
          for (sg4::Link* l : nic_halves(n)) e.links.push_back(m.link_el(l));
        }
        for (DeviceId d : f.target.gpus(topo)) e.hosts.push_back(m.host_el(d));
        break;
      case FaultType::kLinkDegradation:
      case FaultType::kLinkDown:
        for (sg4::Link* l : m.target_links(f.target)) e.links.push_back(m.link_el(l));
        break;
      case FaultType::kNodeFailure:
        for (int n : e.nodes)
          for (sg4::Link* l : nic_halves(n)) e.links.push_back(m.link_el(l));
        for (DeviceId d : f.target.gpus(topo)) e.hosts.push_back(m.host_el(d));
        break;
      case FaultType::kGpuFailure:
      case FaultType::kStraggler:
        for (DeviceId d : f.target.gpus(topo)) e.hosts.push_back(m.host_el(d));
        break;
      case FaultType::kNvlinkSaturation:
        for (DeviceId d : f.target.gpus(topo))
          for (sg4::Link* l : m.halves(platform->nvlink_of(d))) e.links.push_back(m.link_el(l));
        break;
      case FaultType::kStorageSlowdown:
        e.links.push_back(m.link_el(platform->storage_link()));
        break;
      case FaultType::kRdmaRegistration:
      case FaultType::kUnresponsivePeer:
      case FaultType::kCorruptedShard:
        break;
    }
    if (f.target.kind == Kind::kLink || f.target.kind == Kind::kNic ||
        f.target.kind == Kind::kStorage) {
      const std::string name = f.target.kind == Kind::kLink ? f.target.link
                               : f.target.kind == Kind::kNic
                                   ? "node" + std::to_string(f.target.index) + "_nic"
                                   : "storage_link";
      targeted.emplace_back(name, m.target_links(f.target));
    }
    m.els.push_back(std::move(e));
  }
  m.thermal_nodes.assign(thermal_nodes.begin(), thermal_nodes.end());

  // Timeline columns.
  for (int n : m.thermal_nodes) m.columns.push_back("temp_c_node" + std::to_string(n));
  if (m.has_thermal) {
    m.columns.push_back("gpu_temp_c_max");
    m.columns.push_back("retransmit_rate");
  }
  if (topo.nodes <= 16)
    for (int n = 0; n < topo.nodes; ++n)
      m.add_meter("node" + std::to_string(n) + "_nic", nic_halves(n));
  for (auto& [name, hs] : targeted) m.add_meter(name, hs);
  for (const auto& mt : m.meters) m.columns.push_back(mt.column);
  m.columns.push_back("active_faults");
}

FaultInjector::~FaultInjector() {
  stop();
}

void FaultInjector::start() {
  Impl& m = *impl_;
  const double now = m.runtime->now();
  for (int i = 0; i < static_cast<int>(faults_.size()); ++i) {
    const faults::FaultSpec& f = faults_[i];
    Impl::FaultEl& e = m.els[i];
    if (f.end_s <= now) continue;
    e.start_timer = m.runtime->at(std::max(now, f.start_s), [this, i] { on_start(i); });
    if (f.end_s != faults::kForever) e.end_timer = m.runtime->at(f.end_s, [this, i] { on_end(i); });
  }
}

void FaultInjector::stop() {
  if (!impl_) return;
  for (Impl::FaultEl& e : impl_->els) {
    for (TimerId* id : {&e.start_timer, &e.end_timer, &e.tick_timer}) {
      if (*id != kNoTimer) impl_->runtime->cancel(*id);
      *id = kNoTimer;
    }
  }
}

void FaultInjector::on_start(int i) {
  Impl::FaultEl& e = impl_->els[i];
  e.start_timer = kNoTimer;
  e.active = true;
  recompute();
  if (faults_[i].type == FaultType::kThermal) on_tick(i);
}

void FaultInjector::on_tick(int i) {
  Impl::FaultEl& e = impl_->els[i];
  const faults::FaultSpec& f = faults_[i];
  if (e.tick_timer != kNoTimer) {  // fired: re-evaluate
    e.tick_timer = kNoTimer;
    recompute();
  }
  const double next = impl_->runtime->now() + f.thermal.update_s;
  if (e.active && next < f.end_s)
    e.tick_timer = impl_->runtime->at(next, [this, i] { on_tick(i); });
}

void FaultInjector::on_end(int i) {
  Impl::FaultEl& e = impl_->els[i];
  e.end_timer = kNoTimer;
  e.active = false;
  if (e.tick_timer != kNoTimer) impl_->runtime->cancel(e.tick_timer);
  e.tick_timer = kNoTimer;
  recompute();
}

namespace {
// Index of the fastest pstate of h whose speed is at most `factor` of pstate 0 (the slowest
// pstate when none is).
unsigned long pstate_for(const sg4::Host* h, double factor) {
  const unsigned long n = h->get_pstate_count();
  const double peak = h->get_pstate_speed(0);
  unsigned long best = 0, slowest = 0;
  double best_speed = -1;
  for (unsigned long i = 0; i < n; ++i) {
    const double s = h->get_pstate_speed(i);
    if (s < h->get_pstate_speed(slowest)) slowest = i;
    if (s <= factor * peak * (1 + 1e-9) && s > best_speed) {
      best = i;
      best_speed = s;
    }
  }
  return best_speed < 0 ? slowest : best;
}
}  // namespace

void FaultInjector::recompute() {
  Impl& m = *impl_;
  const plan::Topology& topo = m.platform->topology();
  const double now = m.runtime->now();
  for (auto& l : m.links) {
    l.bw_f = l.lat_f = 1;
    l.extra_s = 0;
    l.off = 0;
  }
  for (auto& h : m.hosts) {
    h.speed_f = 1;
    h.off = 0;
  }
  for (size_t i = 0; i < faults_.size(); ++i) {
    const faults::FaultSpec& f = faults_[i];
    const Impl::FaultEl& e = m.els[i];
    if (!e.active) continue;
    switch (f.type) {
      case FaultType::kThermal: {
        const ThermalState s = thermal_state(f.thermal, ambient_at(f.thermal, now - f.start_s));
        for (int n : e.nodes) {
          for (sg4::Link* l : m.halves(m.platform->nic_of(n))) {
            auto& el = m.links[m.link_index.at(l)];
            el.bw_f *= s.nic_bandwidth_factor;
            el.extra_s += s.nic_extra_latency_s;
          }
          for (int g = 0; g < topo.node.gpus; ++g)
            m.hosts[m.host_index.at(n * topo.node.gpus + g)].speed_f *= s.gpu_speed_factor;
        }
        break;
      }
      case FaultType::kLinkDegradation:
        for (int l : e.links) {
          m.links[l].bw_f *= f.bandwidth_factor;
          m.links[l].lat_f *= f.latency_factor;
        }
        break;
      case FaultType::kLinkDown:
      case FaultType::kNodeFailure:
      case FaultType::kGpuFailure:
        for (int l : e.links) ++m.links[l].off;
        for (int h : e.hosts) ++m.hosts[h].off;
        break;
      case FaultType::kStraggler:
        for (int h : e.hosts) m.hosts[h].speed_f *= f.speed_factor;
        break;
      case FaultType::kNvlinkSaturation:
        for (int l : e.links) m.links[l].bw_f *= 1 - f.share;
        break;
      case FaultType::kStorageSlowdown:
        for (int l : e.links) m.links[l].bw_f *= f.bandwidth_factor;
        break;
      case FaultType::kRdmaRegistration:
      case FaultType::kUnresponsivePeer:
      case FaultType::kCorruptedShard:
        break;
    }
  }
  // Apply what changed: state first (a host comes back before its speed is set), then rates.
  for (auto& h : m.hosts) {
    sg4::Host* host = m.platform->host_of(h.device);
    const bool off = h.off > 0;
    if (off != h.applied_off) {
      h.applied_off = off;
      if (off)
        host->turn_off();
      else
        host->turn_on();
    }
    const unsigned long ps = pstate_for(host, h.speed_f);
    if (!off && ps != host->get_pstate()) host->set_pstate(ps);
  }
  for (auto& l : m.links) {
    const bool off = l.off > 0;
    if (off != l.applied_off) {
      l.applied_off = off;
      if (off)
        l.link->turn_off();
      else
        l.link->turn_on();
    }
    const double bw = l.base_bw * l.bw_f;
    if (bw != l.applied_bw) {
      l.applied_bw = bw;
      l.link->set_bandwidth(bw);
    }
    if (l.lat_f != l.applied_lat_f || l.extra_s != l.applied_extra_s) {
      l.applied_lat_f = l.lat_f;
      l.applied_extra_s = l.extra_s;
      m.platform->set_link_latency_adjustment(l.link, l.lat_f, l.extra_s);
    }
  }
}

SimPlatform* FaultInjector::platform() const {
  return impl_->platform;
}

}  // namespace prima::sim
