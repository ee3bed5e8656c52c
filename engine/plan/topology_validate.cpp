// Topology::validate: every size positive, every link usable; messages name the field.
#include "engine/plan/topology.h"

namespace prima::plan {
namespace {

Status positive(const std::string& topo, const std::string& field, double v,
                const std::string& unit) {
  if (!(v > 0))
    return invalid_argument("topology " + topo + ": " + field + " must be positive (" + unit +
                            "), got " + std::to_string(v));
  return ok_status();
}

Status check_link(const std::string& topo, const std::string& field, const LinkSpec& l) {
  PRIMA_RETURN_IF_ERROR(positive(topo, field + ".bandwidth", l.bandwidth_Bps, "bytes/s"));
  if (l.latency_s < 0)
    return invalid_argument("topology " + topo + ": " + field + ".latency must be >= 0 s");
  return ok_status();
}

}  // namespace

Status Topology::validate() const {
  const std::string t = name.empty() ? std::string("(unnamed)") : name;
  PRIMA_RETURN_IF_ERROR(positive(t, "nodes", nodes, "a node count"));
  PRIMA_RETURN_IF_ERROR(positive(t, "node.gpus", node.gpus, "GPUs per node"));
  PRIMA_RETURN_IF_ERROR(positive(t, "gpu.memory", gpu.hbm_bytes, "bytes"));
  PRIMA_RETURN_IF_ERROR(positive(t, "gpu.hbm_bandwidth", gpu.hbm_bw_Bps, "bytes/s"));
  PRIMA_RETURN_IF_ERROR(positive(t, "gpu.fp16_tflops", gpu.fp16_flops, "FLOP/s"));
  PRIMA_RETURN_IF_ERROR(positive(t, "gpu.bf16_tflops", gpu.bf16_flops, "FLOP/s"));
  PRIMA_RETURN_IF_ERROR(positive(t, "gpu.int8_tops", gpu.int8_ops, "OP/s"));
  if (gpu.fp8_flops < 0) return invalid_argument("topology " + t + ": gpu.fp8_tflops must be >= 0");
  PRIMA_RETURN_IF_ERROR(check_link(t, "node.nvlink", node.nvlink));
  PRIMA_RETURN_IF_ERROR(check_link(t, "node.pcie", node.pcie));
  PRIMA_RETURN_IF_ERROR(check_link(t, "node.nic", node.nic));
  PRIMA_RETURN_IF_ERROR(check_link(t, "fabric.link", fabric.link));
  if (node.host_memory_bytes < 0 || node.host_memory_bw_Bps < 0)
    return invalid_argument("topology " + t + ": host memory must be >= 0");
  if (!fabric.down.empty() || !fabric.up.empty() || !fabric.count.empty()) {
    const std::size_t lv = static_cast<std::size_t>(fabric.levels);
    if (lv == 0 || fabric.down.size() != lv || fabric.up.size() != lv || fabric.count.size() != lv)
      return invalid_argument("topology " + t +
                              ": fabric.down, fabric.up and fabric.count must each have "
                              "fabric.levels entries (levels = " +
                              std::to_string(fabric.levels) + ")");
    long leaves = 1;
    for (int d : fabric.down) leaves *= d;
    if (leaves < nodes)
      return invalid_argument("topology " + t + ": the fat tree has " + std::to_string(leaves) +
                              " leaf ports (product of fabric.down) for " + std::to_string(nodes) +
                              " nodes");
  }
  if (storage.read_bandwidth_Bps < 0 || storage.latency_s < 0)
    return invalid_argument("topology " + t + ": storage figures must be >= 0");
  return ok_status();
}

}  // namespace prima::plan
