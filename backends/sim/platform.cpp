#include "backends/sim/platform.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u.hpp>
#include <string_view>
#include <unordered_set>

#include "backends/sim/activity_dispatch.h"
#include "backends/sim/sim_runtime.h"

namespace sg4 = simgrid::s4u;

namespace prima::sim {
namespace {

std::atomic<bool> g_engine_created{false};

std::string fmt_list(const std::vector<int>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s;
}

Status check_topology(const plan::Topology& t) {
  if (t.nodes <= 0) return invalid_argument("topology: nodes must be > 0");
  if (t.node.gpus <= 0) return invalid_argument("topology: node.gpus must be > 0");
  double peak = t.gpu.bf16_flops > 0 ? t.gpu.bf16_flops : t.gpu.fp16_flops;
  if (!(peak > 0)) return invalid_argument("topology: gpu has no bf16/fp16 peak FLOP/s");
  if (!(t.node.nvlink.bandwidth_Bps > 0))
    return invalid_argument("topology: node.nvlink bandwidth");
  if (!(t.node.nic.bandwidth_Bps > 0)) return invalid_argument("topology: node.nic bandwidth");
  if (!t.settings.gpu_direct_rdma && !(t.node.pcie.bandwidth_Bps > 0))
    return invalid_argument("topology: gpu_direct_rdma off needs node.pcie bandwidth");
  if (!t.fabric.type.empty() && t.fabric.type != "fat_tree")
    return invalid_argument("topology: fabric.type '" + t.fabric.type + "' (valid: fat_tree)");
  return ok_status();
}

}  // namespace

double inter_node_bandwidth_factor(const plan::NetworkSettings& s) {
  double f = 1.0;
  if (!s.rdma) f *= kPathFactors.tcp_bandwidth;
  if (!s.numa_aware) f *= kPathFactors.cross_socket_bandwidth;
  return f;
}

double inter_node_latency_factor(const plan::NetworkSettings& s) {
  double f = 1.0;
  if (!s.rdma) f *= kPathFactors.tcp_latency;
  if (!s.numa_aware) f *= kPathFactors.cross_socket_latency;
  return f;
}

int FatTreeShape::leaves() const {
  int n = 1;
  for (int d : down) n *= d;
  return n;
}

FatTreeShape auto_fat_tree(int leaves) {
  FatTreeShape s;
  if (leaves <= 20) {
    s.levels = 1;
    s.down = {leaves};
    s.up = {1};
    s.count = {1};
  } else {
    int leaf_switches = (leaves + 15) / 16;
    s.levels = 2;
    s.down = {16, leaf_switches};
    s.up = {1, 16};
    s.count = {1, 1};
  }
  return s;
}

Result<std::unique_ptr<SimPlatform>> SimPlatform::create(const plan::Topology& t,
                                                         const PlatformOptions& opt) {
  PRIMA_RETURN_IF_ERROR(check_topology(t));
  if (g_engine_created.exchange(true))
    return failed_precondition(
        "sim: a SimGrid engine already exists in this process (one per process; fork per run)");
  std::unique_ptr<SimPlatform> p(new SimPlatform(t));
  try {
    p->build(opt);
  } catch (const std::exception& e) {
    return internal_error(std::string("sim: building the platform failed: ") + e.what());
  }
  return p;
}

SimPlatform::SimPlatform(const plan::Topology& t) : topo_(t) {}

SimPlatform::~SimPlatform() {
  ActivityDispatch::clear_retired();
}

// The SimGrid engine with the flags every platform uses (the CM02 model with no cross-traffic
// and no TCP window: flows share links by max-min fairness) and the caller's.
void SimPlatform::start_engine(const std::vector<std::string>& extra_args) {
  std::vector<std::string> args = {"prima", "--cfg=network/model:CM02",
                                   "--cfg=network/crosstraffic:0", "--cfg=network/TCP-gamma:0",
                                   "--log=root.thres:critical"};
  args.insert(args.end(), extra_args.begin(), extra_args.end());
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  engine_ = std::make_unique<sg4::Engine>(&argc, argv.data());
  ActivityDispatch::install();
}

// The topology's fat tree, or one sized for its nodes plus the storage leaf.
FatTreeShape SimPlatform::fat_tree_shape() {
  const auto& t = topo_;
  FatTreeShape shape;
  if (t.fabric.levels > 0) {
    shape.levels = t.fabric.levels;
    shape.down = t.fabric.down;
    shape.up = t.fabric.up;
    shape.count = t.fabric.count;
  } else {
    shape = auto_fat_tree(t.nodes + 1);  // + the storage leaf
  }
  if (shape.leaves() < t.nodes + 1)
    throw std::invalid_argument(
        "fabric has " + std::to_string(shape.leaves()) +
        " leaves; needs nodes + 1 (storage) = " + std::to_string(t.nodes + 1));
  fat_tree_desc_ = std::to_string(shape.levels) + ";" + fmt_list(shape.down) + ";" +
                   fmt_list(shape.up) + ";" + fmt_list(shape.count);
  return shape;
}

// A node: its GPUs, each behind its NVLink port, and a gateway to the fabric through the NIC
// (and the PCIe path twice when RDMA is staged through host memory).
SimPlatform::Leaf SimPlatform::node_zone(sg4::NetZone* parent, int node,
                                         const std::vector<double>& speeds) {
  const auto& t = topo_;
  const int gpn = t.node.gpus;
  auto* zone = sg4::create_star_zone("node" + std::to_string(node));
  zone->set_parent(parent);
  for (int l = 0; l < gpn; ++l) {
    const DeviceId d = node * gpn + l;
    auto* h = zone->create_host("gpu" + std::to_string(d), speeds);
    host_infos_[d] = HostInfo{node, d};
    h->set_data(&host_infos_[d]);
    h->seal();
    auto* nvl = zone->create_split_duplex_link("gpu" + std::to_string(d) + "_nvl",
                                               t.node.nvlink.bandwidth_Bps);
    nvl->set_latency(t.node.nvlink.latency_s)->seal();
    zone->add_route(h->get_netpoint(), nullptr, nullptr, nullptr,
                    {{nvl, sg4::LinkInRoute::Direction::UP}}, true);
    gpus_[d] = h;
    nvlinks_[d] = nvl;
  }
  auto* gw = zone->create_router("node" + std::to_string(node) + "_gw");
  auto* nic = zone->create_split_duplex_link("node" + std::to_string(node) + "_nic",
                                             t.node.nic.bandwidth_Bps);
  nic->set_latency(t.node.nic.latency_s)->seal();
  nics_[node] = nic;
  std::vector<sg4::LinkInRoute> gw_route;
  if (!t.settings.gpu_direct_rdma) {
    // Staged through host memory: the PCIe path is crossed twice (GPU -> host, host -> NIC).
    auto* pcie = zone->create_split_duplex_link("node" + std::to_string(node) + "_pcie",
                                                t.node.pcie.bandwidth_Bps);
    pcie->set_latency(t.node.pcie.latency_s)->seal();
    pcies_[node] = pcie;
    gw_route.emplace_back(pcie, sg4::LinkInRoute::Direction::UP);
    gw_route.emplace_back(pcie, sg4::LinkInRoute::Direction::DOWN);
  }
  gw_route.emplace_back(nic, sg4::LinkInRoute::Direction::UP);
  zone->add_route(gw, nullptr, nullptr, nullptr, gw_route, true);
  zone->seal();
  return {zone->get_netpoint(), gw};
}

// The storage host behind its link (weights are read from it).
SimPlatform::Leaf SimPlatform::storage_zone(sg4::NetZone* parent) {
  const auto& t = topo_;
  auto* zone = sg4::create_star_zone("storage");
  zone->set_parent(parent);
  storage_ = zone->create_host("storage", nominal_speed_);
  host_infos_.back() = HostInfo{-1, -1};
  storage_->set_data(&host_infos_.back());
  storage_->seal();
  double bw =
      t.storage.read_bandwidth_Bps > 0 ? t.storage.read_bandwidth_Bps : t.node.nic.bandwidth_Bps;
  storage_link_ = zone->create_link("storage_link", bw);
  storage_link_->set_latency(t.storage.latency_s)->seal();
  zone->add_route(storage_->get_netpoint(), nullptr, nullptr, nullptr,
                  {sg4::LinkInRoute(storage_link_)}, true);
  auto* gw = zone->create_router("storage_gw");
  zone->add_route(gw, nullptr, nullptr, nullptr, {}, true);
  zone->seal();
  return {zone->get_netpoint(), gw};
}

// A leaf the fat tree has beyond the nodes and the storage: empty.
SimPlatform::Leaf SimPlatform::spare_zone(sg4::NetZone* parent, int leaf) {
  auto* zone = sg4::create_star_zone("spare" + std::to_string(leaf));
  zone->set_parent(parent);
  auto* gw = zone->create_router("spare" + std::to_string(leaf) + "_gw");
  zone->add_route(gw, nullptr, nullptr, nullptr, {}, true);
  zone->seal();
  return {zone->get_netpoint(), gw};
}

// Links that change bandwidth or state are shared from then on (no exclusive-link shortcut);
// a GPU host's speed or state change reaches the watchers of that GPU. One platform per
// process: these static signals are connected once.
void SimPlatform::watch_changes() {
  sg4::Link::on_bandwidth_change_cb([this](const sg4::Link& l) { mark_shared(&l); });
  sg4::Link::on_state_change_cb([this](const sg4::Link& l) { mark_shared(&l); });
  watchers_.resize(gpus_.size());
  auto watched = [this](const sg4::Host& h) -> const std::vector<HostWatcher*>* {
    auto* info = h.get_data<HostInfo>();
    if (info == nullptr || info->device < 0) return nullptr;
    return &watchers_[info->device];
  };
  sg4::Host::on_speed_change_cb([this, watched](const sg4::Host& h) {
    if (auto* ws = watched(h))
      for (HostWatcher* w : std::vector<HostWatcher*>(*ws))
        w->on_host_speed_change(gpus_[h.get_data<HostInfo>()->device]);
  });
  sg4::Host::on_state_change_cb([this, watched](const sg4::Host& h) {
    if (auto* ws = watched(h))
      for (HostWatcher* w : std::vector<HostWatcher*>(*ws))
        w->on_host_state_change(gpus_[h.get_data<HostInfo>()->device]);
  });
}

void SimPlatform::build(const PlatformOptions& opt) {
  start_engine(opt.extra_args);
  const auto& t = topo_;
  nominal_speed_ = t.gpu.bf16_flops > 0 ? t.gpu.bf16_flops : t.gpu.fp16_flops;
  std::vector<double> speeds;  // the GPU hosts' pstates
  for (double f : opt.pstates) speeds.push_back(nominal_speed_ * f);
  if (speeds.empty()) speeds.push_back(nominal_speed_);
  const FatTreeShape shape = fat_tree_shape();
  gpus_.assign(t.total_gpus(), nullptr);
  nvlinks_.assign(t.total_gpus(), nullptr);
  nics_.assign(t.nodes, nullptr);
  pcies_.assign(t.nodes, nullptr);
  host_infos_.resize(t.total_gpus() + 1);

  // The fat tree's leaves: the nodes, then the storage, then spares.
  auto leaf = [&](sg4::NetZone* parent, const std::vector<unsigned long>&, unsigned long id) {
    const int n = static_cast<int>(id);
    return n < t.nodes    ? node_zone(parent, n, speeds)
           : n == t.nodes ? storage_zone(parent)
                          : spare_zone(parent, n);
  };
  auto u = [](const std::vector<int>& v) { return std::vector<unsigned int>(v.begin(), v.end()); };
  double fbw =
      t.fabric.link.bandwidth_Bps > 0 ? t.fabric.link.bandwidth_Bps : t.node.nic.bandwidth_Bps;
  auto* fabric = sg4::create_fatTree_zone(
      "fabric", nullptr,
      sg4::FatTreeParams(shape.levels, u(shape.down), u(shape.up), u(shape.count)),
      sg4::ClusterCallbacks(leaf), fbw, t.fabric.link.latency_s,
      sg4::Link::SharingPolicy::SPLITDUPLEX);

  // Protocol and NUMA factors on inter-node (and storage) flows only.
  network_model_ = fabric->get_network_model();
  if (inter_node_bandwidth_factor(t.settings) != 1.0 ||
      inter_node_latency_factor(t.settings) != 1.0)
    install_factor_callbacks();
  fabric->seal();
  engine_->seal_platform();
  watch_changes();
}

namespace {
bool inter_node(const sg4::Host* a, const sg4::Host* b) {
  auto* ia = a->get_data<HostInfo>();
  auto* ib = b->get_data<HostInfo>();
  return ia == nullptr || ib == nullptr || ia->node != ib->node || ia->node < 0;
}
}  // namespace

void SimPlatform::install_factor_callbacks() {
  const double bwf = inter_node_bandwidth_factor(topo_.settings);
  if (bwf != 1.0)
    network_model_->set_bw_factor_cb(
        [bwf](double, const sg4::Host* a, const sg4::Host* b, const std::vector<sg4::Link*>&,
              const std::unordered_set<sg4::NetZone*>&) { return inter_node(a, b) ? bwf : 1.0; });
  network_model_->set_lat_factor_cb(
      [this](double, const sg4::Host* a, const sg4::Host* b, const std::vector<sg4::Link*>& links,
             const std::unordered_set<sg4::NetZone*>&) { return latency_factor_of(a, b, links); });
}

double SimPlatform::latency_factor_of(const sg4::Host* a, const sg4::Host* b,
                                      const std::vector<sg4::Link*>& links) const {
  if (next_comm_latency_ > 0) {
    const double target = next_comm_latency_;
    next_comm_latency_ = 0;
    double base = 0;
    for (const sg4::Link* l : links) base += l->get_latency();
    if (base > 0) return target / base;
  }
  const double path = inter_node(a, b) ? inter_node_latency_factor(topo_.settings) : 1.0;
  if (latency_adjustments_.empty()) return path;
  double base = 0, scaled = 0, extra = 0;
  for (const sg4::Link* l : links) {
    const double lat = l->get_latency();
    base += lat;
    auto it = latency_adjustments_.find(l);
    if (it == latency_adjustments_.end()) {
      scaled += lat;
    } else {
      scaled += lat * it->second.factor;
      extra += it->second.extra_s;
    }
  }
  if (!(base > 0)) return path;  // a zero-latency route cannot be scaled into a delay
  return (path * scaled + extra) / base;
}

void SimPlatform::set_link_latency_adjustment(const sg4::Link* l, double factor, double extra_s) {
  if (factor == 1.0 && extra_s == 0.0)
    latency_adjustments_.erase(l);
  else
    latency_adjustments_[l] = LatencyAdjustment{factor, extra_s};
  if (!adjustments_installed_) {
    adjustments_installed_ = true;
    install_factor_callbacks();
  }
  mark_shared(l);
}

bool SimPlatform::supports_lone_flows() const {
  return inter_node_latency_factor(topo_.settings) > 0;
}

bool SimPlatform::enable_lone_flows() {
  if (!supports_lone_flows()) return false;
  if (!adjustments_installed_) {
    adjustments_installed_ = true;
    install_factor_callbacks();
  }
  occupancy_.enable();
  return true;
}

double SimPlatform::flow_latency(const sg4::Host* a, const sg4::Host* b) const {
  return route_latency(a, b) * (inter_node(a, b) ? inter_node_latency_factor(topo_.settings) : 1.0);
}

double SimPlatform::adjusted_latency(const sg4::Link* l) const {
  auto it = latency_adjustments_.find(l);
  if (it == latency_adjustments_.end()) return l->get_latency();
  return l->get_latency() * it->second.factor + it->second.extra_s;
}

void SimPlatform::watch_host(DeviceId d, HostWatcher* w) {
  watchers_.at(d).push_back(w);
}

void SimPlatform::unwatch_host(DeviceId d, HostWatcher* w) {
  auto& v = watchers_.at(d);
  v.erase(std::remove(v.begin(), v.end(), w), v.end());
}

void SimPlatform::claim_links(int slot, const std::vector<sg4::Link*>& links) {
  for (const sg4::Link* l : links) link_claims_[l].slots.push_back(slot);
  ++claims_version_;
}

void SimPlatform::release_links(int slot, const std::vector<sg4::Link*>& links) {
  for (const sg4::Link* l : links) {
    auto it = link_claims_.find(l);
    if (it == link_claims_.end()) continue;
    auto& v = it->second.slots;
    auto pos = std::find(v.begin(), v.end(), slot);
    if (pos != v.end()) v.erase(pos);
  }
  ++claims_version_;
}

bool SimPlatform::exclusive_to(int slot, const std::vector<sg4::Link*>& links) const {
  if (all_shared_) return false;
  for (const sg4::Link* l : links) {
    auto it = link_claims_.find(l);
    if (it == link_claims_.end() || it->second.changed) return false;
    for (int s : it->second.slots)
      if (s != slot) return false;
  }
  return true;
}

bool SimPlatform::exclusive_to_range(int first, int last,
                                     const std::vector<sg4::Link*>& links) const {
  if (all_shared_) return false;
  for (const sg4::Link* l : links) {
    auto it = link_claims_.find(l);
    if (it == link_claims_.end() || it->second.changed) return false;
    for (int s : it->second.slots)
      if (s < first || s > last) return false;
  }
  return true;
}

std::vector<sg4::Link*> SimPlatform::contention_links(int slot,
                                                      const std::vector<sg4::Link*>& links) const {
  if (all_shared_) return links;
  std::vector<sg4::Link*> out;
  std::vector<std::vector<int>> sets;  // claim set of out[i] (empty: kept as it is)
  for (sg4::Link* l : links) {
    auto it = link_claims_.find(l);
    if (it == link_claims_.end() || it->second.changed) {
      out.push_back(l);
      sets.emplace_back();
      continue;
    }
    std::vector<int> set = it->second.slots;
    std::sort(set.begin(), set.end());
    set.erase(std::unique(set.begin(), set.end()), set.end());
    if (set.size() == 1 && set[0] == slot) continue;  // only this slot's flows
    auto same = std::find(sets.begin(), sets.end(), set);
    if (same == sets.end()) {
      out.push_back(l);
      sets.push_back(std::move(set));
    } else if (std::string_view(l->get_cname()) <
               out[static_cast<size_t>(same - sets.begin())]->get_cname()) {
      out[static_cast<size_t>(same - sets.begin())] = l;
    }
  }
  return out;
}

void SimPlatform::mark_shared(const sg4::Link* l) {
  LinkClaims& c = link_claims_[l];
  if (c.changed) return;
  c.changed = true;
  ++claims_version_;
}

void SimPlatform::mark_all_shared() {
  if (all_shared_) return;
  all_shared_ = true;
  ++claims_version_;
}

void SimPlatform::run() {
  if (SimRuntime* rt = SimRuntime::current()) {
    rt->run();
  } else {
    engine_->run();
  }
  ActivityDispatch::clear_retired();
}

void SimPlatform::run_until(Time t) {
  if (SimRuntime* rt = SimRuntime::current()) {
    rt->run_until(t);
  } else {
    engine_->run_until(t);
  }
  ActivityDispatch::clear_retired();
}

Time SimPlatform::now() {
  if (const SimRuntime* rt = SimRuntime::current()) return rt->now();
  return sg4::Engine::get_clock();
}

double SimPlatform::current_speed(const sg4::Host* h) {
  return h->get_speed() * h->get_available_speed();
}

const SimPlatform::CachedRoute& SimPlatform::cached_route(const sg4::Host* a,
                                                          const sg4::Host* b) const {
  auto [it, fresh] = routes_.try_emplace({a, b});
  if (fresh) a->route_to(b, it->second.links, &it->second.latency_s);
  return it->second;
}

std::vector<sg4::Link*> SimPlatform::route(const sg4::Host* a, const sg4::Host* b) const {
  return cached_route(a, b).links;
}

double SimPlatform::route_latency(const sg4::Host* a, const sg4::Host* b) const {
  return cached_route(a, b).latency_s;
}

std::string SimPlatform::first_failed_element(const sg4::Host* a, const sg4::Host* b) const {
  if (!a->is_on()) return "host " + a->get_name();
  if (!b->is_on()) return "host " + b->get_name();
  for (auto* l : cached_route(a, b).links)
    if (!l->is_on()) return "link " + l->get_name();
  return "";
}

}  // namespace prima::sim
