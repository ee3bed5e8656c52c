// Cluster descriptions (topologies/*.json) and GPU specs (topologies/gpus.json), as data.
// The sim backend builds its SimGrid platform from a Topology; the plan checks memory fit
// against its GpuSpec. Plain values; thread-compatible.
#pragma once

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "engine/config/json_reader.h"
#include "engine/core/status.h"
#include "engine/core/types.h"

namespace prima::plan {

struct GpuSpec {
  std::string name;
  std::string source;
  double hbm_bytes = 0;
  double hbm_bw_Bps = 0;
  double fp16_flops = 0;  // dense tensor-core peak, FLOP/s
  double bf16_flops = 0;
  double int8_ops = 0;
  double fp8_flops = 0;  // 0 when unsupported
  int sms = 0;           // streaming multiprocessors (GEMM wave quantization); 0 = unknown
};

struct LinkSpec {
  double bandwidth_Bps = 0;  // each direction
  double latency_s = 0;
};

struct NodeSpec {
  int gpus = 0;
  std::string cpu;
  double host_memory_bytes = 0;
  double host_memory_bw_Bps = 0;
  LinkSpec nvlink;  // per GPU, to the node's NVLink/NVSwitch fabric, each direction
  LinkSpec pcie;    // per GPU, to the host / NIC
  LinkSpec nic;     // per node, to the fabric (one NIC port per node)
};

// /etc/bitbrick/network.conf-style switches that change the modelled path.
struct NetworkSettings {
  bool rdma = true;             // rdma.enable: RDMA verbs vs TCP for inter-node traffic
  bool gpu_direct_rdma = true;  // NIC reads GPU memory; off: staged through host memory
  bool numa_aware = true;       // GPU and NIC on the same socket; off: crosses the UPI link
};

struct FabricSpec {
  std::string type = "fat_tree";
  LinkSpec link;  // each switch link
  // SimGrid fat-tree parameters; empty = chosen from the node count.
  int levels = 0;
  std::vector<int> down, up, count;
};

struct StorageSpec {
  std::string type;
  double read_bandwidth_Bps = 0;  // aggregate, shared by all nodes
  double latency_s = 0;
};

struct Topology {
  std::string name;
  std::string description;
  GpuSpec gpu;
  NodeSpec node;
  int nodes = 0;
  // Nodes of other GPU types ("node_gpus"): after the nodes of `gpu`, each group's nodes in
  // order hold its GPU (same node shape and fabric). Only disaggregated pools that name their
  // `gpu` run on them.
  struct NodeGroup {
    int nodes = 0;
    GpuSpec gpu;
  };
  std::vector<NodeGroup> node_gpus;
  // The nodes holding GPUs named `gpu_name`, ascending.
  std::vector<int> nodes_with(const std::string& gpu_name) const;
  // The spec of a GPU type the topology has (`gpu` or a node_gpus group's), or null.
  const GpuSpec* gpu_type(const std::string& gpu_name) const;
  // Its GPU types, comma-separated (messages).
  std::string gpu_types() const;
  int nodes_per_rack = 0;  // racks for faults ({"rack": i}); 0 = all nodes in one rack
  FabricSpec fabric;
  StorageSpec storage;
  NetworkSettings settings;

  int total_gpus() const { return nodes * node.gpus; }
  int node_of(DeviceId d) const { return d / node.gpus; }
  int rack_size() const { return nodes_per_rack > 0 ? nodes_per_rack : nodes; }
  int racks() const { return (nodes + rack_size() - 1) / std::max(1, rack_size()); }
  Status validate() const;
};

Result<GpuSpec> gpu_by_name(const std::string& name);  // from the embedded gpus.json
// Parses a GPU specs document ({"description", "gpus": {NAME: {...}}}, as gpus.json); errors
// name `file` and the JSON path.
Result<std::map<std::string, GpuSpec>> parse_gpu_specs(const config::Json& j,
                                                       const std::string& file);
std::vector<std::string> gpu_names();

// Parses a topology object (schema: docs/topologies.md); {"base": name, ...} patches an
// embedded topology. Throws config::ConfigError naming the file and JSON path.
Topology parse_topology(const config::JsonReader& r);
// A topology given in a scenario: a name of an embedded topology ("bitbrick_k1"), a path to
// a JSON file, or an inline object.
Topology resolve_topology(const config::JsonReader& parent, const std::string& key);
std::vector<std::string> topology_names();

}  // namespace prima::plan
