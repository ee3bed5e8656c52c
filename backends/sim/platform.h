// SimPlatform: the one SimGrid engine of the process and the cluster platform built from a
// plan::Topology (GPU hosts, NVLink, PCIe, NIC, fat-tree fabric, storage). See
// docs/sim-backend.md for the model of each path.
//
// Platform:
//   fat-tree zone "fabric" (SimGrid create_fatTree_zone); leaf i < nodes is node zone "node<i>",
//   leaf `nodes` is the storage zone; further leaves (rounding up to full switches) are empty.
//   node zone (star): hosts "gpu<D>" (D = global DeviceId) with split-duplex NVLink links
//   "gpu<D>_nvl" to the hub; router "node<i>_gw" behind the split-duplex NIC link "node<i>_nic"
//   (and, with gpu_direct_rdma off, the PCIe link "node<i>_pcie" crossed in both halves).
//   storage zone (star): host "storage" behind link "storage_link" (read bandwidth, latency).
// NetworkSettings act on inter-node flows through the CM02 bandwidth/latency factor callbacks
// (kPathFactors below) and, for gpu_direct_rdma, through the extra PCIe link on the route.
//
// Thread-safety: none; use from the simulation loop (the thread that calls run()).
// Ownership: one SimPlatform per process (SimGrid allows one Engine per process); create()
// fails if one was already created. SimGrid owns hosts and links; the pointers returned here
// stay valid for the life of the process.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "backends/sim/link_occupancy.h"
#include "engine/core/status.h"
#include "engine/core/types.h"
#include "engine/plan/topology.h"

namespace simgrid::kernel::resource {
class NetworkModelIntf;
}
namespace simgrid::kernel::routing {
class NetPoint;
}
namespace simgrid::s4u {
class Engine;
class Host;
class Link;
class NetZone;
class SplitDuplexLink;
}  // namespace simgrid::s4u

namespace prima::sim {

struct FatTreeShape;

// Inter-node protocol and path factors relative to the link figures of the topology (which
// describe RDMA over GPUDirect on a NUMA-local NIC). Sources: seed 000's table (128 KB
// messages: RDMA 38 GB/s and 0.7 ms, TCP 12 GB/s and 2.4 ms); cross-socket penalty ≈ (stated
// assumption: peer-to-peer DMA through UPI reaches about 60% of a NUMA-local path).
struct PathFactors {
  double tcp_bandwidth = 12.0 / 38.0;   // rdma off: bandwidth x this
  double tcp_latency = 2.4 / 0.7;       // rdma off: latency x this
  double cross_socket_bandwidth = 0.6;  // numa_aware off: bandwidth x this (≈, assumption)
  double cross_socket_latency = 1.2;    // numa_aware off: latency x this (≈, assumption)
};
inline constexpr PathFactors kPathFactors{};

// The bandwidth and latency factors applied to an inter-node flow under `s`.
double inter_node_bandwidth_factor(const plan::NetworkSettings& s);
double inter_node_latency_factor(const plan::NetworkSettings& s);

// Told when a GPU host's speed (pstate, speed profile) or state changes. See watch_host().
class HostWatcher {
 public:
  virtual ~HostWatcher() = default;
  virtual void on_host_speed_change(simgrid::s4u::Host* h) = 0;
  virtual void on_host_state_change(simgrid::s4u::Host* h) = 0;
};

struct PlatformOptions {
  // Extra SimGrid arguments ("--cfg=name:value"), appended to the defaults.
  std::vector<std::string> extra_args;
  // Throttle levels of every GPU host as fractions of peak; pstate i runs at pstates[i] x peak.
  std::vector<double> pstates = {1.0, 0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3};
};

// Host data attached to every host of the platform (Host::get_data<HostInfo>()).
struct HostInfo {
  int node = -1;         // node index; -1 for storage
  DeviceId device = -1;  // -1 for storage
};

class SimPlatform {
 public:
  // Creates the SimGrid engine (CM02, no cross-traffic, no TCP gamma, quiet logs) and the
  // platform. Fails on an invalid topology or when called a second time in one process.
  static Result<std::unique_ptr<SimPlatform>> create(const plan::Topology& t,
                                                     const PlatformOptions& opt = {});
  ~SimPlatform();
  SimPlatform(const SimPlatform&) = delete;
  SimPlatform& operator=(const SimPlatform&) = delete;

  // Runs the simulation until no event is left / until simulated time t: the loop of the
  // live SimRuntime (SimRuntime::current()), or SimGrid's engine alone when there is none.
  void run();
  void run_until(Time t);
  static Time now();

  const plan::Topology& topology() const { return topo_; }
  int num_gpus() const { return static_cast<int>(gpus_.size()); }
  simgrid::s4u::Host* host_of(DeviceId d) const { return gpus_.at(d); }
  simgrid::s4u::Host* storage_host() const { return storage_; }
  simgrid::s4u::SplitDuplexLink* nvlink_of(DeviceId d) const { return nvlinks_.at(d); }
  simgrid::s4u::SplitDuplexLink* nic_of(int node) const { return nics_.at(node); }
  // Null when gpu_direct_rdma is on (no staging through host memory).
  simgrid::s4u::SplitDuplexLink* pcie_of(int node) const { return pcies_.at(node); }
  simgrid::s4u::Link* storage_link() const { return storage_link_; }
  // Peak (pstate 0) speed of a GPU host, FLOP/s.
  double nominal_speed() const { return nominal_speed_; }
  // Current speed of a host: pstate speed x available share (speed profile).
  static double current_speed(const simgrid::s4u::Host* h);
  // Fat-tree parameters used ("levels;down;up;count").
  const std::string& fat_tree_description() const { return fat_tree_desc_; }
  // Sum of latencies and the links of the route between two hosts. Routes are static (a link
  // that fails stays on its routes, off), so each pair's is computed once and kept.
  double route_latency(const simgrid::s4u::Host* a, const simgrid::s4u::Host* b) const;
  std::vector<simgrid::s4u::Link*> route(const simgrid::s4u::Host* a,
                                         const simgrid::s4u::Host* b) const;
  // Name of the first link that is off on the route a -> b, or of an end host that is off;
  // empty when the whole path is up.
  std::string first_failed_element(const simgrid::s4u::Host* a, const simgrid::s4u::Host* b) const;

  // Link claims, for analytic shortcuts on links that only one flow can ever use.
  // A flow slot (a stream of flows that never overlap each other, e.g. one stage's PP sends)
  // gets an id from new_flow_slot() and claims the links of its route. A link is exclusive
  // to a slot while no other slot claimed it, its bandwidth never changed and it never went
  // off (Link::on_bandwidth_change / on_state_change mark it shared for good: faults and
  // drift need the flow model). mark_all_shared() gives up exclusivity everywhere (for
  // components whose flows cannot be claimed up front, e.g. SimFabric). claims_version()
  // changes whenever any of this changes, so users can cache their verdicts.
  int new_flow_slot() { return next_flow_slot_++; }
  // Host watchers: `w` hears of speed and state changes of GPU `d` (synchronously, from
  // inside the call that changed it) until unwatch_host().
  void watch_host(DeviceId d, HostWatcher* w);
  void unwatch_host(DeviceId d, HostWatcher* w);
  void claim_links(int slot, const std::vector<simgrid::s4u::Link*>& links);
  void release_links(int slot, const std::vector<simgrid::s4u::Link*>& links);
  bool exclusive_to(int slot, const std::vector<simgrid::s4u::Link*>& links) const;
  // The same for a group of slots [first, last] (one stage's all-to-all paths): no slot
  // outside it claims the links, and none of them changed.
  bool exclusive_to_range(int first, int last, const std::vector<simgrid::s4u::Link*>& links) const;
  // The links of slot's route where its flows can meet another flow, one per set of claiming
  // slots: a link only `slot` claims carries no other flow; links claimed by the same slots
  // carry the same flows (each of those slots' routes holds them all), so one of them (the
  // first by name) stands for the others. Every link (in route order) while all links are
  // shared, and every link that is unclaimed or changed. Valid while claims do not change.
  std::vector<simgrid::s4u::Link*> contention_links(
      int slot, const std::vector<simgrid::s4u::Link*>& links) const;
  void mark_shared(const simgrid::s4u::Link* l);
  void mark_all_shared();
  std::uint64_t claims_version() const { return claims_version_; }

  // Latency adjustments of single links (fault models; see backends/sim/fault_injector.h).
  // A flow's latency becomes path factor x sum(latency_l x factor_l) + sum(extra_l) over the
  // links l of its route (the halves of split-duplex links are links of their own), through
  // the CM02 latency-factor callback, so flows already in their latency phase are not
  // stalled (Link::set_latency would). The callback is installed on first use, so runs
  // without adjustments keep the plain model. factor 1, extra 0 removes the adjustment.
  // Marks the link shared (analytic shortcuts would not see the new latency).
  void set_link_latency_adjustment(const simgrid::s4u::Link* l, double factor, double extra_s);
  // latency x factor + extra of one link (its nominal latency when not adjusted).
  double adjusted_latency(const simgrid::s4u::Link* l) const;

  // Lone flows (SimSpeedups::lone_flows): which links carry a flow now. supports_lone_flows():
  // whether a lone flow can be timed as CM02 times it (a positive latency factor).
  // enable_lone_flows() turns them on where supported and installs the factor callbacks (the
  // same factors as without them); false where not supported.
  // flow_latency: a flow's latency a -> b (route latency x path factor, no adjustments).
  LinkOccupancy& occupancy() { return occupancy_; }
  bool supports_lone_flows() const;
  bool enable_lone_flows();
  double flow_latency(const simgrid::s4u::Host* a, const simgrid::s4u::Host* b) const;
  // The next Comm started gets this latency (seconds, > 0) instead of its route's, through
  // the latency-factor callback (a lone flow converting itself; see link_occupancy.h).
  // Cleared by the Comm's start; comm_latency_override_pending() tells whether it was used.
  void set_next_comm_latency(double s) { next_comm_latency_ = s; }
  bool comm_latency_override_pending() const { return next_comm_latency_ > 0; }

 private:
  struct LatencyAdjustment {
    double factor = 1.0;
    double extra_s = 0.0;
  };
  void install_factor_callbacks();
  double latency_factor_of(const simgrid::s4u::Host* a, const simgrid::s4u::Host* b,
                           const std::vector<simgrid::s4u::Link*>& links) const;

  explicit SimPlatform(const plan::Topology& t);
  // build(): the engine, the fat tree's shape, a zone per leaf (nodes, storage, spares), the
  // fabric, and the change signals, in that order.
  void build(const PlatformOptions& opt);
  using Leaf = std::pair<simgrid::kernel::routing::NetPoint*, simgrid::kernel::routing::NetPoint*>;
  void start_engine(const std::vector<std::string>& extra_args);
  FatTreeShape fat_tree_shape();
  Leaf node_zone(simgrid::s4u::NetZone* parent, int node, const std::vector<double>& speeds);
  Leaf storage_zone(simgrid::s4u::NetZone* parent);
  Leaf spare_zone(simgrid::s4u::NetZone* parent, int leaf);
  void watch_changes();

  plan::Topology topo_;
  std::unique_ptr<simgrid::s4u::Engine> engine_;
  std::vector<simgrid::s4u::Host*> gpus_;
  std::vector<simgrid::s4u::SplitDuplexLink*> nvlinks_;
  std::vector<simgrid::s4u::SplitDuplexLink*> nics_;
  std::vector<simgrid::s4u::SplitDuplexLink*> pcies_;
  simgrid::s4u::Host* storage_ = nullptr;
  simgrid::s4u::Link* storage_link_ = nullptr;
  std::vector<HostInfo> host_infos_;                 // sized once; hosts point into it
  std::vector<std::vector<HostWatcher*>> watchers_;  // per GPU
  double nominal_speed_ = 0;
  std::string fat_tree_desc_;
  struct LinkClaims {
    std::vector<int> slots;  // one entry per claim
    bool changed = false;    // bandwidth or state changed at least once
  };
  std::unordered_map<const simgrid::s4u::Link*, LinkClaims> link_claims_;
  bool all_shared_ = false;
  int next_flow_slot_ = 0;
  std::uint64_t claims_version_ = 0;
  simgrid::kernel::resource::NetworkModelIntf* network_model_ = nullptr;
  bool adjustments_installed_ = false;
  std::unordered_map<const simgrid::s4u::Link*, LatencyAdjustment> latency_adjustments_;
  LinkOccupancy occupancy_;
  mutable double next_comm_latency_ = 0;  // consumed by latency_factor_of
  struct CachedRoute {
    std::vector<simgrid::s4u::Link*> links;
    double latency_s = 0;
  };
  struct HostPairHash {
    std::size_t operator()(
        const std::pair<const simgrid::s4u::Host*, const simgrid::s4u::Host*>& p) const {
      return std::hash<const void*>()(p.first) * 31 + std::hash<const void*>()(p.second);
    }
  };
  const CachedRoute& cached_route(const simgrid::s4u::Host* a, const simgrid::s4u::Host* b) const;
  mutable std::unordered_map<std::pair<const simgrid::s4u::Host*, const simgrid::s4u::Host*>,
                             CachedRoute, HostPairHash>
      routes_;
};

// Fat-tree parameters for `leaves` leaves when the FabricSpec gives none: one level up to
// 20 leaves, else two levels of 16-port leaf switches, non-blocking (16 spines).
struct FatTreeShape {
  int levels = 1;
  std::vector<int> down, up, count;
  int leaves() const;
};
FatTreeShape auto_fat_tree(int leaves);

}  // namespace prima::sim
