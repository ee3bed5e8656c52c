// KV offload tiers in a scenario ("kv_offload"): the tiers below the GPU's prefix cache,
// fastest first, each with its capacity per replica and its read bandwidth (default: from
// the topology). The sim cluster turns them into kv::KvTiers per replica (a shared tier is
// one store for the whole cluster). Schema: docs/scenario-format.md. Plain values.
#pragma once

#include <string>
#include <vector>

#include "engine/config/json_reader.h"
#include "engine/plan/topology.h"

namespace prima::scenario {

struct KvTierConfig {
  std::string type;                // "host", "nvme", "remote"
  double capacity_bytes = 0;       // per replica; a shared tier's total
  double bandwidth_Bps = 0;        // read bandwidth a replica gets (0: from the topology)
  double write_bandwidth_Bps = 0;  // write bandwidth a replica gets (0: the read bandwidth)
  bool shared = false;             // one store for every replica (remote storage)
};

// Parses {"tiers": [{"type", "capacity", "bandwidth", "write_bandwidth", "shared"}, ...]}. Throws
// ConfigError naming the path: unknown type, a type twice, tiers out of order (host, nvme, remote).
std::vector<KvTierConfig> parse_kv_offload(const config::JsonReader& r);

// The read bandwidth a replica's GPU gets from a tier: the given one, else host: the GPU's
// PCIe link (each GPU reads its share over its own); nvme: the node's storage read bandwidth
// shared by the replica's GPUs on the node; remote: the lower of storage and NIC, shared the
// same way. Bytes per GPU over this bandwidth is the read time of a block.
double tier_gpu_bandwidth_Bps(const KvTierConfig& t, const plan::Topology& topo,
                              int gpus_per_node_of_replica);
// The write bandwidth a replica's GPU gets into a tier: write_bandwidth when given, else the
// read bandwidth (above).
double tier_gpu_write_bandwidth_Bps(const KvTierConfig& t, const plan::Topology& topo,
                                    int gpus_per_node_of_replica);

}  // namespace prima::scenario
