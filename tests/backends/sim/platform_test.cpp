// SimPlatform: platform sizes, routes and hand-computed transfer times per network setting.
// Each TEST runs in its own process (ctest), since SimGrid allows one engine per process.
#include "backends/sim/platform.h"

#include <gtest/gtest.h>

#include <simgrid/s4u.hpp>

#include "backends/sim/sim_fabric.h"
#include "backends/sim/sim_runtime.h"
#include "tests/backends/sim/sim_test_util.h"

namespace prima::sim {
namespace {

using testing::test_topology;

std::unique_ptr<SimPlatform> make(const plan::Topology& t) {
  auto p = SimPlatform::create(t);
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return std::move(p).value();
}

void check_size(int nodes, int fabric_links_across) {
  auto p = make(test_topology(nodes));
  EXPECT_EQ(p->num_gpus(), nodes * 8);
  EXPECT_EQ(p->host_of(0)->get_name(), "gpu0");
  EXPECT_EQ(p->host_of(nodes * 8 - 1)->get_name(), "gpu" + std::to_string(nodes * 8 - 1));
  // Intra-node: nvl up + nvl down.
  EXPECT_EQ(p->route(p->host_of(0), p->host_of(1)).size(), 2u);
  // Inter-node (first to last node): nvl, nic, fabric links, nic, nvl.
  EXPECT_EQ(p->route(p->host_of(0), p->host_of(nodes * 8 - 1)).size(), 4u + fabric_links_across);
  EXPECT_FALSE(p->route(p->host_of(0), p->storage_host()).empty());
}

TEST(SimPlatform, Builds2Nodes) {
  check_size(2, 2);
}
TEST(SimPlatform, Builds16Nodes) {
  check_size(16, 2);
}
TEST(SimPlatform, Builds50Nodes) {
  check_size(50, 4);
}
TEST(SimPlatform, Builds256Nodes) {
  check_size(256, 4);
}

TEST(SimPlatform, AutoFatTreeShape) {
  EXPECT_EQ(auto_fat_tree(3).levels, 1);
  EXPECT_EQ(auto_fat_tree(20).leaves(), 20);
  FatTreeShape s = auto_fat_tree(257);
  EXPECT_EQ(s.levels, 2);
  EXPECT_GE(s.leaves(), 257);
  EXPECT_EQ(s.up[1] * s.count[1], s.down[0]);  // non-blocking leaf switches
}

TEST(SimPlatform, SecondPlatformInOneProcessFails) {
  auto p = make(test_topology(2));
  auto q = SimPlatform::create(test_topology(2));
  EXPECT_FALSE(q.ok());
}

TEST(SimPlatform, InvalidTopologyIsAnError) {
  plan::Topology t = test_topology(2);
  t.nodes = 0;
  EXPECT_FALSE(SimPlatform::create(t).ok());
}

// Runs one transfer alone and returns its duration.
double timed_transfer(SimPlatform* p, DeviceId a, DeviceId b, double bytes) {
  SimRuntime rt;
  SimFabric fabric(p, &rt);
  double end = -1;
  Status st;
  fabric.transfer(a, b, bytes, [&](Status s) {
    st = s;
    end = rt.now();
  });
  p->run();
  EXPECT_TRUE(st.ok()) << st.to_string();
  return end;
}

constexpr double kS = 1e9;

TEST(SimPlatform, IntraNodeTransferTime) {
  auto p = make(test_topology(2));
  // nvl up + nvl down: 2 x 1 us, at 100 GB/s.
  EXPECT_NEAR(timed_transfer(p.get(), 0, 1, kS), 2e-6 + kS / 100e9, 1e-9);
}

TEST(SimPlatform, InterNodeTransferTime) {
  auto p = make(test_topology(2));
  // nvl (1 us) + nic (2 us) + 2 fabric links (1 us) + nic + nvl = 8 us; bottleneck 25 GB/s.
  EXPECT_NEAR(p->route_latency(p->host_of(0), p->host_of(8)), 8e-6, 1e-12);
  EXPECT_NEAR(timed_transfer(p.get(), 0, 8, kS), 8e-6 + kS / 25e9, 1e-9);
}

TEST(SimPlatform, InterNodeAcrossSpinesTime) {
  auto p = make(test_topology(50));
  // 2-level fat tree: 4 fabric links between nodes under different leaf switches.
  EXPECT_NEAR(p->route_latency(p->host_of(0), p->host_of(49 * 8)), 10e-6, 1e-12);
  EXPECT_NEAR(timed_transfer(p.get(), 0, 49 * 8, kS), 10e-6 + kS / 25e9, 1e-9);
}

TEST(SimPlatform, TwoFlowsShareTheNic) {
  auto p = make(test_topology(3));
  SimRuntime rt;
  SimFabric fabric(p.get(), &rt);
  double end1 = -1, end2 = -1;
  fabric.transfer(0, 8, kS, [&](Status s) { end1 = rt.now(); });
  fabric.transfer(1, 16, kS, [&](Status s) { end2 = rt.now(); });
  p->run();
  // Both leave node 0 through its NIC: 12.5 GB/s each.
  EXPECT_NEAR(end1, 8e-6 + kS / 12.5e9, 1e-8);
  EXPECT_NEAR(end2, 8e-6 + kS / 12.5e9, 1e-8);
}

TEST(SimPlatform, OppositeDirectionsDoNotShare) {
  auto p = make(test_topology(2));
  SimRuntime rt;
  SimFabric fabric(p.get(), &rt);
  double end1 = -1, end2 = -1;
  fabric.transfer(0, 8, kS, [&](Status s) { end1 = rt.now(); });
  fabric.transfer(9, 1, kS, [&](Status s) { end2 = rt.now(); });
  p->run();
  EXPECT_NEAR(end1, 8e-6 + kS / 25e9, 1e-8);  // split-duplex links
  EXPECT_NEAR(end2, 8e-6 + kS / 25e9, 1e-8);
}

TEST(SimPlatform, RdmaOffIsSlowerByTheTableFactors) {
  plan::Topology t = test_topology(2);
  t.settings.rdma = false;
  auto p = make(t);
  const double bwf = kPathFactors.tcp_bandwidth, latf = kPathFactors.tcp_latency;
  EXPECT_NEAR(timed_transfer(p.get(), 0, 8, kS), 8e-6 * latf + kS / (25e9 * bwf), 1e-8);
}

TEST(SimPlatform, RdmaOffLeavesIntraNodeAlone) {
  plan::Topology t = test_topology(2);
  t.settings.rdma = false;
  auto p = make(t);
  EXPECT_NEAR(timed_transfer(p.get(), 0, 1, kS), 2e-6 + kS / 100e9, 1e-9);
}

TEST(SimPlatform, NumaUnawareIsSlower) {
  plan::Topology t = test_topology(2);
  t.settings.numa_aware = false;
  auto p = make(t);
  const double bwf = kPathFactors.cross_socket_bandwidth, latf = kPathFactors.cross_socket_latency;
  EXPECT_NEAR(timed_transfer(p.get(), 0, 8, kS), 8e-6 * latf + kS / (25e9 * bwf), 1e-8);
}

TEST(SimPlatform, NoGpuDirectStagesThroughPcie) {
  plan::Topology t = test_topology(2);
  t.settings.gpu_direct_rdma = false;
  t.node.pcie = {20e9, 1e-6};  // slower than the NIC, so it is the bottleneck
  auto p = make(t);
  ASSERT_NE(p->pcie_of(0), nullptr);
  // Each side crosses PCIe twice: + 4 x 1 us.
  EXPECT_NEAR(p->route_latency(p->host_of(0), p->host_of(8)), 12e-6, 1e-12);
  EXPECT_NEAR(timed_transfer(p.get(), 0, 8, kS), 12e-6 + kS / 20e9, 1e-8);
}

TEST(SimPlatform, StorageLoad) {
  auto p = make(test_topology(2));
  SimRuntime rt;
  SimFabric fabric(p.get(), &rt);
  double end = -1;
  fabric.load_from_storage(9, kS, [&](Status s) {
    EXPECT_TRUE(s.ok());
    end = rt.now();
  });
  p->run();
  // storage link (10 us) + 2 fabric links + nic + nvl; bottleneck 25 GB/s (fabric port).
  EXPECT_NEAR(end, 10e-6 + 2e-6 + 2e-6 + 1e-6 + kS / 25e9, 1e-8);
}

TEST(SimFabric, LinkOffFailsTheTransfer) {
  auto p = make(test_topology(2));
  SimRuntime rt;
  SimFabric fabric(p.get(), &rt);
  Status st;
  bool called = false;
  fabric.transfer(0, 8, kS, [&](Status s) {
    st = s;
    called = true;
  });
  rt.at(0.01, [&] {
    p->nic_of(1)->get_link_up()->turn_off();
    p->nic_of(1)->get_link_down()->turn_off();
  });
  p->run();
  ASSERT_TRUE(called);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("node1_nic"), std::string::npos) << st.message();
}

TEST(SimFabric, HostOffFailsAtOnce) {
  auto p = make(test_topology(2));
  SimRuntime rt;
  SimFabric fabric(p.get(), &rt);
  p->host_of(3)->turn_off();
  Status st;
  fabric.transfer(0, 3, kS, [&](Status s) { st = s; });
  p->run();
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("gpu3"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace prima::sim
