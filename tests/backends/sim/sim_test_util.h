// Hand-built topologies with round numbers for the sim-backend tests, so expected times can
// be computed by hand. Plain functions; no state.
#pragma once

#include <utility>
#include <vector>

#include "engine/plan/parallel_plan.h"
#include "engine/plan/topology.h"

namespace prima::sim::testing {

// GPU 1 PFLOP/s; NVLink 100 GB/s, 1 us; PCIe 32 GB/s, 1 us; NIC 25 GB/s, 2 us;
// fabric links 25 GB/s, 1 us; storage 50 GB/s, 10 us.
inline plan::Topology test_topology(int nodes, int gpus_per_node = 8) {
  plan::Topology t;
  t.name = "test";
  t.gpu.name = "TEST-GPU";
  t.gpu.bf16_flops = 1e15;
  t.gpu.fp16_flops = 1e15;
  t.gpu.hbm_bytes = 80e9;
  t.gpu.hbm_bw_Bps = 2e12;
  t.node.gpus = gpus_per_node;
  t.node.nvlink = {100e9, 1e-6};
  t.node.pcie = {32e9, 1e-6};
  t.node.nic = {25e9, 2e-6};
  t.nodes = nodes;
  t.fabric.link = {25e9, 1e-6};
  t.storage.type = "test";
  t.storage.read_bandwidth_Bps = 50e9;
  t.storage.latency_s = 10e-6;
  return t;
}

// A replica's GPUs, devices[stage][rank].
inline plan::ReplicaPlacement placement(std::vector<std::vector<DeviceId>> devices) {
  plan::ReplicaPlacement p;
  p.devices = std::move(devices);
  return p;
}

}  // namespace prima::sim::testing
