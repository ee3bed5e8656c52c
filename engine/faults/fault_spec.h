// Fault timeline of a scenario ("faults": [...]) and the communication environment ("env":
// {...}) that decides how some faults play out. Backend-neutral data: the sim backend's
// FaultInjector applies it to the SimGrid platform; the engine never sees faults directly,
// only their consequences through the seam (failed or slow steps, failed transfers, probes).
// Schema and the models behind each type: docs/faults.md.
//
// Every fault has a window [start_s, end_s) on the simulated clock (end_s = kForever when it
// never ends) and a target. Effects of overlapping faults on one element compose: speed and
// bandwidth factors multiply, an element is off while any state fault covering it is active.
// Overlaps that have no single meaning are errors at load time (two thermal faults covering
// one node at once, or two faults of the same type on the same element at once).
//
// Plain values; parse_faults is strict (unknown keys and bad values throw config::ConfigError
// naming the file and JSON path, e.g. "x.json: /faults/2/target: node 7 is not in topology
// bitbrick_k1 (nodes 0-1)").
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/config/json_reader.h"
#include "engine/core/types.h"
#include "engine/plan/topology.h"

namespace prima::faults {

inline constexpr double kForever = std::numeric_limits<double>::infinity();

enum class FaultType {
  kThermal,           // room/rack/node temperature over time: NIC clock drift, GPU throttling
  kLinkDegradation,   // a link's bandwidth x factor, latency x factor
  kLinkDown,          // a link off, back on at end_s
  kNodeFailure,       // every GPU (and the NIC) of a node off; back on at end_s
  kGpuFailure,        // one GPU off; back on at end_s
  kStraggler,         // a GPU (or every GPU of a node) computes at speed_factor x its speed
  kNvlinkSaturation,  // a co-located job holds `share` of the NVLink bandwidth of a node
  kRdmaRegistration,  // inter-node transfers of a node fail at `failure_rate` (retried)
  kUnresponsivePeer,  // a GPU answers collectives only after `stall_s`
  kStorageSlowdown,   // storage read bandwidth x factor (weight loading)
  kCorruptedShard,    // a GPU's weight shard fails its checksum when loaded
};

// Names used in JSON ("thermal", "link_degradation", "link_down", "node_failure",
// "gpu_failure", "straggler", "nvlink_saturation", "rdma_registration_failure",
// "unresponsive_peer", "storage_slowdown", "corrupted_shard").
const std::vector<std::string>& fault_type_names();
const char* fault_type_name(FaultType t);

struct FaultTarget {
  enum class Kind {
    kCluster,  // "cluster": every node (thermal: the room)
    kRack,     // {"rack": i}: nodes [i*R, (i+1)*R), R = topology nodes_per_rack (all nodes)
    kNode,     // {"node": i}
    kGpu,      // {"gpu": d} (global device id)
    kNic,      // {"nic": i}: node i's NIC link (both directions)
    kLink,     // {"link": "name"}: "gpu<D>_nvl", "node<i>_nic", "node<i>_pcie", "storage_link"
    kStorage,  // "storage"
  };
  Kind kind = Kind::kCluster;
  int index = -1;    // rack, node, gpu or nic index
  std::string link;  // kLink: the platform's link name (validated against the topology)

  // Nodes covered (cluster, rack, node, nic; a gpu's node; a link's node when it has one).
  std::vector<int> nodes(const plan::Topology& t) const;
  // GPUs covered (cluster, rack, node: all their GPUs; gpu: itself; links: none).
  std::vector<DeviceId> gpus(const plan::Topology& t) const;
  std::string describe() const;  // "node 1", "gpu 3", "link node1_nic", "rack 0", "cluster"
};

// Thermal model parameters (docs/faults.md has the equations). Temperatures in Celsius.
struct ThermalSpec {
  // Ambient temperature over the window: piecewise linear through (offset_s, celsius) points,
  // offsets relative to start_s; before the first point / after the last, the end values.
  std::vector<std::pair<double, double>> profile;
  double nominal_c = 22;             // temperature at which the NIC clocks are calibrated
  double drift_ppm_per_c = 1.5;      // NIC oscillator drift per degree of deviation
  double drift_tolerance_ppm = 10;   // drift the link absorbs without retransmissions
  double retransmit_per_ppm = 1e-3;  // packet retransmission probability per ppm above it
  double max_retransmit_rate = 0.2;
  double retransmit_timeout_s = 0.004;  // mean latency per NAKed retransmission (x r per message)
  // A message whose last packet is lost waits for the RC ACK timeout (probability r per
  // message). < 0: from the environment's NCCL_IB_TIMEOUT (CommEnv::ib_ack_timeout_s).
  double ack_timeout_s = -1;
  double gpu_load_rise_c = 45;          // GPU temperature = ambient + this under load
  double gpu_throttle_c = 83;           // above it the GPU clock drops ...
  double throttle_per_c = 0.03;         // ... by this fraction of peak per degree (to pstates)
  double update_s = 1.0;                // how often the model is re-evaluated
};

struct FaultSpec {
  std::string name;  // optional label ("" -> "<type>#<index>")
  FaultType type = FaultType::kLinkDown;
  FaultTarget target;
  double start_s = 0;
  double end_s = kForever;
  // Type-specific parameters (only those of the type are read from JSON).
  double bandwidth_factor = 1.0;        // link_degradation, storage_slowdown: in (0, 1]
  double latency_factor = 1.0;          // link_degradation: >= 1
  double speed_factor = 1.0;            // straggler: in (0, 1]
  double share = 0.5;                   // nvlink_saturation: fraction of bandwidth taken, [0, 1)
  double failure_rate = 0.05;           // rdma_registration_failure: per transfer, [0, 1]
  double retry_s = 0.005;               // rdma_registration_failure: re-registration before a retry
  int max_retries = 3;                  // rdma_registration_failure: then the transfer fails
  double registration_cost_s = 0.0002;  // with UCX_MEMTYPE_CACHE=n: paid per inter-node transfer
  double stall_s = 10;                  // unresponsive_peer: a collective waits this long
  ThermalSpec thermal;                  // thermal

  std::string label(int index) const;  // name, or "<type>#<index>"
  bool active_at(double t) const { return t >= start_s && t < end_s; }
};

// The communication environment: variables the real backend would read from the process
// environment, set in the scenario's "env" object (strings, as in a shell).
struct CommEnv {
  // NCCL_TIMEOUT (seconds): a collective waiting longer fails (NCCL "unresponsive peer").
  double collective_timeout_s = 600;
  // UCX_MEMTYPE_CACHE ("y"/"n"): with the cache off, registration failures cannot happen but
  // every inter-node transfer under a rdma_registration_failure fault pays registration_cost_s.
  bool ucx_memtype_cache = true;
  // NCCL_IB_TIMEOUT (exponent t, 1..31): the InfiniBand RC ACK timeout 4.096 us x 2^t; NCCL's
  // default t = 18 gives 1.07 s. A message whose last packet is lost waits this long.
  int ib_timeout = 18;
  double ib_ack_timeout_s() const { return 4.096e-6 * double(std::int64_t(1) << ib_timeout); }
};

// Reads "faults" (optional array) and checks every entry against the topology and the run
// (start_s in [0, run_end_s), end after start, targets that exist, compatible overlaps).
// run_end_s = duration + max_drain. Throws config::ConfigError naming the entry.
std::vector<FaultSpec> parse_faults(const config::JsonReader& scenario_root,
                                    const plan::Topology& t, double duration_s, double run_end_s);
// Reads "env" (optional object). Unknown variables are errors listing the known ones.
CommEnv parse_env(const config::JsonReader& scenario_root);

}  // namespace prima::faults
