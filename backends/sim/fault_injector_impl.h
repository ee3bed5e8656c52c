// Internal state of FaultInjector (backends/sim/fault_injector.h), shared by its two source
// files: fault_injector.cpp (fault windows applied to the platform) and fault_observers.cpp
// (transfer-level faults, timeline columns, byte counters). Not for other users.
//
// Thread-safety: simulation loop only. Ownership: owned by the FaultInjector.
#pragma once

#include <simgrid/s4u.hpp>
#include <unordered_map>
#include <utility>
#include <vector>

#include "backends/sim/fault_injector.h"

namespace prima::sim {

struct FaultInjector::Impl {
  // A link (or one half of a split-duplex link) some fault acts on, with the state the
  // active faults ask for and the state last applied.
  struct LinkEl {
    simgrid::s4u::Link* link = nullptr;
    double base_bw = 0;
    double bw_f = 1, lat_f = 1, extra_s = 0;
    int off = 0;
    double applied_bw = 0;
    double applied_lat_f = 1, applied_extra_s = 0;
    bool applied_off = false;
  };
  struct HostEl {
    DeviceId device = -1;
    double speed_f = 1;
    int off = 0;
    bool applied_off = false;
  };
  // A fault's elements (indices into links / hosts) and its timers.
  struct FaultEl {
    std::vector<int> links;
    std::vector<int> hosts;
    std::vector<int> nodes;
    bool active = false;
    TimerId start_timer = kNoTimer, end_timer = kNoTimer, tick_timer = kNoTimer;
  };
  // A measured link (util_ column): its halves (one for a plain link), nominal bandwidths
  // and the bytes counted since the last sample.
  struct Meter {
    std::string column;
    std::vector<const simgrid::s4u::Link*> halves;
    std::vector<double> nominal_Bps;
    std::vector<double> bytes;
  };

  SimPlatform* platform = nullptr;
  Runtime* runtime = nullptr;
  std::mt19937_64 rng;
  // A draw in [0, 1) from rng (53 bits): the one place transfer-level faults draw from.
  double uniform() { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }
  std::vector<LinkEl> links;
  std::unordered_map<const simgrid::s4u::Link*, int> link_index;
  std::vector<HostEl> hosts;
  std::vector<int> host_index;  // per DeviceId: index into hosts, or -1
  std::vector<FaultEl> els;
  std::vector<Meter> meters;
  std::unordered_map<const simgrid::s4u::Link*, std::pair<int, int>> meter_of;  // (meter, half)
  std::vector<int> thermal_nodes;  // nodes some thermal fault covers, ascending
  bool has_thermal = false;
  std::vector<std::string> columns;

  int link_el(simgrid::s4u::Link* l);
  int host_el(DeviceId d);
  // The links (halves) a link-type target names.
  std::vector<simgrid::s4u::Link*> target_links(const faults::FaultTarget& t) const;
  std::vector<simgrid::s4u::Link*> halves(simgrid::s4u::SplitDuplexLink* l) const;
  void add_meter(const std::string& name, std::vector<simgrid::s4u::Link*> hs);
};

// Names a time for messages: "5 s", "0.25 s".
std::string seconds_text(double s);

}  // namespace prima::sim
