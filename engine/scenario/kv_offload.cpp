// parse_kv_offload and tier_gpu_bandwidth_Bps (kv_offload.h).
#include "engine/scenario/kv_offload.h"

#include <algorithm>

namespace prima::scenario {
namespace {

int rank_of(const std::string& type) {
  return type == "host" ? 0 : type == "nvme" ? 1 : 2;
}

}  // namespace

std::vector<KvTierConfig> parse_kv_offload(const config::JsonReader& r) {
  std::vector<KvTierConfig> out;
  const auto tiers = r.objects("tiers");
  if (tiers.empty()) r.fail("tiers", "expected at least one tier (host, nvme, remote)");
  for (std::size_t i = 0; i < tiers.size(); ++i) {
    const config::JsonReader& t = tiers[i];
    KvTierConfig c;
    c.type = t.one_of("type", {"host", "nvme", "remote"});
    c.capacity_bytes = t.bytes("capacity");
    if (!(c.capacity_bytes > 0)) t.fail("capacity", "expected a size > 0, e.g. \"200GB\"");
    c.bandwidth_Bps = t.bandwidth_Bps("bandwidth", 0);
    c.write_bandwidth_Bps = t.bandwidth_Bps("write_bandwidth", 0);
    c.shared = t.boolean("shared", c.type == "remote");
    t.finish();
    if (!out.empty() && rank_of(c.type) <= rank_of(out.back().type))
      r.fail("tiers", "tier " + std::to_string(i) + " (" + c.type +
                          ") must come after and below tier " + std::to_string(i - 1) + " (" +
                          out.back().type + "): the order is host, nvme, remote, each once");
    out.push_back(c);
  }
  r.finish();
  return out;
}

double tier_gpu_bandwidth_Bps(const KvTierConfig& t, const plan::Topology& topo,
                              int gpus_per_node_of_replica) {
  if (t.bandwidth_Bps > 0) return t.bandwidth_Bps;
  const double sharing = std::max(1, gpus_per_node_of_replica);
  if (t.type == "host") return topo.node.pcie.bandwidth_Bps;
  if (t.type == "nvme") return topo.storage.read_bandwidth_Bps / sharing;
  return std::min(topo.storage.read_bandwidth_Bps, topo.node.nic.bandwidth_Bps) / sharing;
}

double tier_gpu_write_bandwidth_Bps(const KvTierConfig& t, const plan::Topology& topo,
                                    int gpus_per_node_of_replica) {
  if (t.write_bandwidth_Bps > 0) return t.write_bandwidth_Bps;
  return tier_gpu_bandwidth_Bps(t, topo, gpus_per_node_of_replica);
}

}  // namespace prima::scenario
