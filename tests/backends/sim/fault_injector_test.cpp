// FaultInjector: every fault type against hand-computed times on the test topology
// (sim_test_util.h: NIC 25 GB/s 2 us, fabric 25 GB/s 1 us, NVLink 100 GB/s 1 us, storage
// 50 GB/s 10 us). One platform per TEST (ctest runs each in its own process).
#include "backends/sim/fault_injector.h"

#include <gtest/gtest.h>

#include <random>
#include <simgrid/s4u.hpp>

#include "backends/sim/sim_executor.h"
#include "backends/sim/sim_fabric.h"
#include "backends/sim/sim_runtime.h"
#include "backends/sim/thermal_model.h"
#include "tests/backends/sim/sim_test_util.h"

namespace prima::sim {
namespace {

using faults::FaultSpec;
using faults::FaultTarget;
using faults::FaultType;
using Kind = FaultTarget::Kind;

struct Harness {
  std::unique_ptr<SimPlatform> platform;
  std::unique_ptr<SimRuntime> rt;
  std::unique_ptr<FaultInjector> inj;
  explicit Harness(int nodes, std::vector<FaultSpec> f = {}, faults::CommEnv env = {}) {
    auto p = SimPlatform::create(testing::test_topology(nodes));
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    platform = std::move(p).value();
    rt = std::make_unique<SimRuntime>();
    inj = std::make_unique<FaultInjector>(platform.get(), rt.get(), std::move(f), env, 42);
    inj->start();
  }
  ~Harness() { inj->stop(); }
};

FaultSpec fault(FaultType type, Kind kind, int index, double start, double end,
                std::string link = "") {
  FaultSpec f;
  f.type = type;
  f.target.kind = kind;
  f.target.index = index;
  f.target.link = std::move(link);
  f.start_s = start;
  f.end_s = end;
  return f;
}

using testing::placement;

perf::StageCost stage(double compute_s, int allreduces = 0, double ar_bytes = 0,
                      double send_bytes = 0) {
  perf::StageCost c;
  c.compute_s = compute_s;
  c.allreduces = allreduces;
  c.allreduce_bytes = ar_bytes;
  c.send_bytes = send_bytes;
  return c;
}

SimCostFns fixed(std::vector<perf::StageCost> stages) {
  return default_cost_fns([=](const BatchShape&) {
    perf::StepCost c;
    c.stages = stages;
    return c;
  });
}

// Runs the simulation in slices until `done` (faults keep timers pending, so run() would go
// on to the end of every window, or forever with a thermal fault).
void run_until_done(Harness& h, const bool& done) {
  double t = h.rt->now();
  while (!done && t < 1000) {
    t += 0.01;
    h.platform->run_until(t);
  }
  ASSERT_TRUE(done);
}

StepResult step_at(Harness& h, SimExecutor& ex, Time at) {
  StepResult out;
  bool done = false;
  h.rt->at(at, [&] {
    ex.launch(StepBatch{}, [&](const StepResult& r) {
      out = r;
      done = true;
    });
  });
  run_until_done(h, done);
  return out;
}

struct Done {
  Status status;
  double at = -1;
  bool done = false;
};
// A fabric transfer (from >= 0) or a weight load (from < 0) started at `at`.
Done move_at(Harness& h, SimFabric& fab, DeviceId from, DeviceId to, Bytes n, Time at) {
  Done out;
  h.rt->at(at, [&] {
    auto cb = [&](Status s) {
      out.status = std::move(s);
      out.at = h.rt->now();
      out.done = true;
    };
    if (from >= 0)
      fab.transfer(from, to, n, cb);
    else
      fab.load_from_storage(to, n, cb);
  });
  run_until_done(h, out.done);
  return out;
}

constexpr double kRoute01 = 8e-6;  // gpu0 -> gpu8: nvl 1 + nic 2 + fabric 2 x 1 + nic 2 + nvl 1

TEST(ThermalModel, DefaultsGiveAFewPercentRetransmissionsInAWarmRoom) {
  faults::ThermalSpec spec;
  spec.profile = {{0, 22}, {100, 40}};
  EXPECT_DOUBLE_EQ(ambient_at(spec, -1), 22);
  EXPECT_DOUBLE_EQ(ambient_at(spec, 50), 31);
  EXPECT_DOUBLE_EQ(ambient_at(spec, 500), 40);
  const ThermalState cool = thermal_state(spec, 22);
  EXPECT_EQ(cool.retransmit_rate, 0);
  EXPECT_EQ(cool.gpu_speed_factor, 1);
  const ThermalState hot = thermal_state(spec, 40);  // 27 ppm, 17 above tolerance
  EXPECT_NEAR(hot.retransmit_rate, 0.017, 1e-12);
  EXPECT_NEAR(hot.nic_bandwidth_factor, 0.983 / (1 + 0.017 * kGoBackNWindow), 1e-12);
  EXPECT_NEAR(hot.nic_extra_latency_s, 0.017 * 0.004, 1e-15);
  EXPECT_NEAR(hot.gpu_c, 85, 1e-12);
  EXPECT_NEAR(hot.gpu_speed_factor, 0.94, 1e-12);
}

TEST(FaultInjector, ThermalDriftSlowsAFlowAcrossTheNic) {
  FaultSpec f = fault(FaultType::kThermal, Kind::kCluster, -1, 0, faults::kForever);
  f.thermal.profile = {{0, 40}};
  f.thermal.ack_timeout_s = 0;  // tail-loss stalls: ThermalTailLossesStallMessages
  Harness h(2, {f});
  SimFabric fab(h.platform.get(), h.rt.get());
  fab.set_fault_injector(h.inj.get());
  Done d = move_at(h, fab, 0, 8, 1e8, 0.5);
  ASSERT_TRUE(d.status.ok()) << d.status.to_string();
  const ThermalState s = thermal_state(f.thermal, 40);
  // Both NICs drift: each adds r x timeout per message and keeps (1-r)/(1+rW) of 25 GB/s.
  EXPECT_NEAR(d.at - 0.5,
              kRoute01 + 2 * s.nic_extra_latency_s + 1e8 / (25e9 * s.nic_bandwidth_factor), 1e-9);
  // The GPUs run at 85 C: 0.94 of peak, throttled to the 0.9 pstate.
  EXPECT_EQ(h.platform->host_of(3)->get_pstate(), 1u);
  EXPECT_NEAR(h.inj->retransmit_rate(1), 0.017, 1e-12);
  EXPECT_NEAR(h.inj->gpu_temperature_c(9), 85, 1e-12);
  const auto cols = h.inj->timeline_columns();
  const auto vals = h.inj->sample_timeline(1.0, 1.0);
  ASSERT_EQ(cols.size(), vals.size());
  EXPECT_EQ(cols[0], "temp_c_node0");
  EXPECT_EQ(vals[0], "40.00");
  EXPECT_EQ(cols[3], "retransmit_rate");
  EXPECT_EQ(vals[3], "0.01700");
  EXPECT_EQ(vals.back(), "thermal#0");
}

// A TP2 step across two hot nodes: throttled compute, the all-reduce latency term with the
// NICs' added latency per message, ring flows slowed by the retransmissions.
TEST(FaultInjector, ThermalDriftSlowsAnInterNodeTensorParallelStep) {
  FaultSpec f = fault(FaultType::kThermal, Kind::kCluster, -1, 0, faults::kForever);
  f.thermal.profile = {{0, 40}};
  f.thermal.ack_timeout_s = 0;
  Harness h(2, {f});
  SimExecutor ex(h.platform.get(), h.rt.get(), placement({{0, 8}}), fixed({stage(0.010, 2, 1e8)}));
  ex.set_fault_injector(h.inj.get());
  StepResult r = step_at(h, ex, 0.5);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  const ThermalState s = thermal_state(f.thermal, 40);
  const double compute = 0.010 / 0.9;                              // the 0.9 pstate
  const double lat_term = 2 * 2 * (2e-6 + s.nic_extra_latency_s);  // 2 all-reduces x 2(p-1)
  const double flows = kRoute01 + 2 * s.nic_extra_latency_s + 2e8 / (25e9 * s.nic_bandwidth_factor);
  EXPECT_NEAR(r.end_s - r.start_s, compute + lat_term + flows, 1e-9);
}

TEST(FaultInjector, LinkDegradationScalesBandwidthAndLatency) {
  FaultSpec f = fault(FaultType::kLinkDegradation, Kind::kLink, 0, 0, 1.0, "node0_nic");
  f.bandwidth_factor = 0.5;
  f.latency_factor = 3;
  Harness h(2, {f});
  SimFabric fab(h.platform.get(), h.rt.get());
  fab.set_fault_injector(h.inj.get());
  Done d = move_at(h, fab, 0, 8, 1e8, 0.1);
  ASSERT_TRUE(d.status.ok());
  EXPECT_NEAR(d.at - 0.1, kRoute01 + 2 * 2e-6 + 1e8 / 12.5e9, 1e-9);
  Done after = move_at(h, fab, 0, 8, 1e8, 2.0);  // the fault ended at 1 s
  EXPECT_NEAR(after.at - 2.0, kRoute01 + 1e8 / 25e9, 1e-9);
}

TEST(FaultInjector, LinkDownFailsACrossingFlowAndComesBack) {
  Harness h(2, {fault(FaultType::kLinkDown, Kind::kNic, 1, 0.1, 0.2)});
  SimFabric fab(h.platform.get(), h.rt.get());
  fab.set_fault_injector(h.inj.get());
  Done inflight = move_at(h, fab, 0, 8, 1e10, 0.05);  // 0.4 s of transfer: cut at 0.1
  EXPECT_EQ(inflight.status.code(), StatusCode::kUnavailable);
  EXPECT_NEAR(inflight.at, 0.1, 1e-9);
  EXPECT_NE(inflight.status.message().find("node1_nic"), std::string::npos)
      << inflight.status.message();
  Done during = move_at(h, fab, 8, 0, 1e6, 0.15);
  EXPECT_FALSE(during.status.ok());
  Done after = move_at(h, fab, 0, 8, 1e8, 0.25);
  ASSERT_TRUE(after.status.ok()) << after.status.to_string();
  EXPECT_NEAR(after.at - 0.25, kRoute01 + 1e8 / 25e9, 1e-9);
}

// A pipeline send whose route crosses a NIC that is down fails the step at once, naming the
// link (a SimGrid Comm started over an off link would never end, even after the link is back
// on: found by the random fault schedules). Once the link is up, steps run again.
TEST(FaultInjector, StepStartedAcrossADownLinkFailsAndRecovers) {
  Harness h(2, {fault(FaultType::kLinkDown, Kind::kNic, 1, 0.1, 0.5)});
  SimExecutor ex(h.platform.get(), h.rt.get(), placement({{0}, {8}}),
                 fixed({stage(0.010, 0, 0, 1e6), stage(0.010)}));
  ex.set_fault_injector(h.inj.get());
  StepResult during = step_at(h, ex, 0.2);
  EXPECT_EQ(during.status.code(), StatusCode::kUnavailable);
  EXPECT_NE(during.status.message().find("node1_nic"), std::string::npos)
      << during.status.message();
  EXPECT_LT(during.end_s, 0.25);  // at once, not hung until the link returns
  StepResult after = step_at(h, ex, 0.6);
  EXPECT_TRUE(after.status.ok()) << after.status.to_string();
}

TEST(FaultInjector, NodeFailureFailsStepsAndHealthUntilItEnds) {
  FaultSpec f = fault(FaultType::kNodeFailure, Kind::kNode, 1, 0.1, 1.0);
  f.name = "psu";
  Harness h(2, {f});
  SimExecutor ex(h.platform.get(), h.rt.get(), placement({{8, 9}}), fixed({stage(0.010)}));
  ex.set_fault_injector(h.inj.get());
  StepResult r = step_at(h, ex, 0.2);
  EXPECT_EQ(r.status.code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status.message().find("gpu8"), std::string::npos) << r.status.message();
  Status health;
  double answered = -1;
  bool done = false;
  auto probe = [&] {
    ex.check_health([&](Status s) {
      health = std::move(s);
      answered = h.rt->now();
      done = true;
    });
  };
  h.rt->at(0.3, probe);
  run_until_done(h, done);
  EXPECT_EQ(health.code(), StatusCode::kUnavailable);
  EXPECT_NE(health.message().find("gpu8 is down"), std::string::npos) << health.message();
  EXPECT_NE(health.message().find("psu"), std::string::npos) << health.message();
  EXPECT_NEAR(answered, 0.3, 1e-12);
  done = false;
  h.rt->at(1.5, probe);
  run_until_done(h, done);
  EXPECT_TRUE(health.ok()) << health.to_string();
  StepResult r2 = step_at(h, ex, 2.0);
  ASSERT_TRUE(r2.status.ok()) << r2.status.to_string();
  EXPECT_NEAR(r2.end_s - r2.start_s, 0.010, 1e-9);
}

TEST(FaultInjector, GpuFailureTurnsOneHostOff) {
  Harness h(1, {fault(FaultType::kGpuFailure, Kind::kGpu, 2, 0.0, 0.5)});
  h.rt->at(0.1, [&] {
    EXPECT_FALSE(h.platform->host_of(2)->is_on());
    EXPECT_TRUE(h.platform->host_of(1)->is_on());
  });
  h.platform->run();
  EXPECT_TRUE(h.platform->host_of(2)->is_on());
}

TEST(FaultInjector, StragglerSlowsAStepByItsSpeed) {
  FaultSpec f = fault(FaultType::kStraggler, Kind::kGpu, 1, 0, faults::kForever);
  f.speed_factor = 0.55;  // the nearest pstate at or below: 0.5
  Harness h(1, {f});
  SimExecutor ex(h.platform.get(), h.rt.get(), placement({{0, 1}}), fixed({stage(0.010)}));
  ex.set_fault_injector(h.inj.get());
  StepResult r = step_at(h, ex, 0.1);
  ASSERT_TRUE(r.status.ok());
  EXPECT_NEAR(r.end_s - r.start_s, 0.010 / 0.5, 1e-9);
}

TEST(FaultInjector, NvlinkSaturationSlowsTheAnalyticAllreduce) {
  FaultSpec f = fault(FaultType::kNvlinkSaturation, Kind::kNode, 0, 1.0, faults::kForever);
  f.share = 0.5;
  Harness h(1, {f});
  SimExecutor ex(h.platform.get(), h.rt.get(), placement({{0, 1, 2, 3}}),
                 fixed({stage(0.010, 8, 1e6)}));
  ex.set_fault_injector(h.inj.get());
  // Before: 2*3/4 * 1e6 / 100e9 + 6 x 1 us = 21 us per all-reduce; after, at 50 GB/s: 36 us.
  StepResult before = step_at(h, ex, 0.5);
  EXPECT_NEAR(before.end_s - before.start_s, 0.010 + 8 * 21e-6, 1e-9);
  StepResult after = step_at(h, ex, 2.0);
  EXPECT_NEAR(after.end_s - after.start_s, 0.010 + 8 * 36e-6, 1e-9);
}

TEST(FaultInjector, RdmaRegistrationFailureFailsTheStepAfterTheRetries) {
  FaultSpec f = fault(FaultType::kRdmaRegistration, Kind::kNode, 1, 0, faults::kForever);
  f.failure_rate = 1;
  f.max_retries = 2;
  f.retry_s = 0.005;
  Harness h(2, {f});
  SimExecutor ex(h.platform.get(), h.rt.get(), placement({{0}, {8}}),
                 fixed({stage(0.010, 0, 0, 1e8), stage(0.010)}));
  ex.set_fault_injector(h.inj.get());
  StepResult r = step_at(h, ex, 0.1);
  EXPECT_EQ(r.status.code(), StatusCode::kUnavailable);
  const std::string& m = r.status.message();
  EXPECT_NE(m.find("node 1"), std::string::npos) << m;
  EXPECT_NE(m.find("rdma_registration_failure"), std::string::npos) << m;
  EXPECT_NE(m.find("UCX_MEMTYPE_CACHE"), std::string::npos) << m;
  EXPECT_NEAR(r.end_s - r.start_s, 0.010 + 2 * 0.005, 1e-9);
}

TEST(FaultInjector, RdmaRegistrationWithTheCacheOffPaysTheRegistrationCost) {
  FaultSpec f = fault(FaultType::kRdmaRegistration, Kind::kNode, 1, 0, faults::kForever);
  f.failure_rate = 1;
  f.registration_cost_s = 0.0002;
  faults::CommEnv env;
  env.ucx_memtype_cache = false;
  Harness h(2, {f}, env);
  SimExecutor ex(h.platform.get(), h.rt.get(), placement({{0}, {8}}),
                 fixed({stage(0.010, 0, 0, 1e8), stage(0.010)}));
  ex.set_fault_injector(h.inj.get());
  StepResult r = step_at(h, ex, 0.1);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_NEAR(r.end_s - r.start_s, 0.020 + 0.0002 + kRoute01 + 1e8 / 25e9, 1e-9);
}

TEST(FaultInjector, UnresponsivePeerPastTheTimeoutFailsTheStep) {
  FaultSpec f = fault(FaultType::kUnresponsivePeer, Kind::kGpu, 1, 0, faults::kForever);
  f.stall_s = 10;
  faults::CommEnv env;
  env.collective_timeout_s = 5;
  Harness h(1, {f}, env);
  SimExecutor ex(h.platform.get(), h.rt.get(), placement({{0, 1}}), fixed({stage(0.010, 4, 1e6)}));
  ex.set_fault_injector(h.inj.get());
  StepResult r = step_at(h, ex, 0.1);
  EXPECT_EQ(r.status.code(), StatusCode::kDeadlineExceeded);
  EXPECT_NE(
      r.status.message().find(
          "collective timed out after 5 s waiting for gpu 1 (unresponsive peer; NCCL_TIMEOUT=5"),
      std::string::npos)
      << r.status.message();
  // The compute, then the first all-reduce waits until the timeout.
  EXPECT_NEAR(r.end_s - r.start_s, 0.010 + 5, 1e-9);
  // The health probe answers once the peer does.
  double answered = -1;
  bool done = false;
  h.rt->at(20, [&] {
    ex.check_health([&](Status s) {
      answered = s.ok() ? h.rt->now() : -2;
      done = true;
    });
  });
  run_until_done(h, done);
  EXPECT_NEAR(answered, 30, 1e-9);
}

TEST(FaultInjector, UnresponsivePeerWithinTheTimeoutDelaysTheStep) {
  FaultSpec f = fault(FaultType::kUnresponsivePeer, Kind::kGpu, 1, 0, faults::kForever);
  f.stall_s = 10;
  Harness h(1, {f});  // NCCL_TIMEOUT 600 s
  SimExecutor ex(h.platform.get(), h.rt.get(), placement({{0, 1}}), fixed({stage(0.010, 4, 1e6)}));
  ex.set_fault_injector(h.inj.get());
  StepResult r = step_at(h, ex, 0.1);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  // 4 all-reduces of 1 MB over TP2 on NVLink: 1e6 / 100e9 + 2 x 1 us = 12 us each.
  EXPECT_NEAR(r.end_s - r.start_s, 0.010 + 4 * 12e-6 + 10, 1e-9);
}

TEST(FaultInjector, StorageSlowdownSlowsWeightLoading) {
  FaultSpec f = fault(FaultType::kStorageSlowdown, Kind::kStorage, -1, 1.0, 2.0);
  f.bandwidth_factor = 0.25;
  Harness h(1, {f});
  SimFabric fab(h.platform.get(), h.rt.get());
  fab.set_fault_injector(h.inj.get());
  const double lat = h.platform->route_latency(h.platform->storage_host(), h.platform->host_of(0));
  Done before = move_at(h, fab, -1, 0, 1e9, 0.5);  // NIC-bound: 25 GB/s
  EXPECT_NEAR(before.at - 0.5, lat + 1e9 / 25e9, 1e-9);
  Done during = move_at(h, fab, -1, 0, 1e9, 1.2);  // storage-bound: 12.5 GB/s
  ASSERT_TRUE(during.status.ok());
  EXPECT_NEAR(during.at - 1.2, lat + 1e9 / 12.5e9, 1e-9);
}

TEST(FaultInjector, CorruptedShardFailsTheLoadAfterTheRead) {
  Harness h(1, {fault(FaultType::kCorruptedShard, Kind::kGpu, 3, 0, faults::kForever)});
  SimFabric fab(h.platform.get(), h.rt.get());
  fab.set_fault_injector(h.inj.get());
  const double lat = h.platform->route_latency(h.platform->storage_host(), h.platform->host_of(3));
  Done bad = move_at(h, fab, -1, 3, 1e9, 0.1);
  EXPECT_FALSE(bad.status.ok());
  EXPECT_NE(
      bad.status.message().find(
          "weight shard of gpu 3 failed its checksum (sha256 mismatch): corrupted_shard fault"),
      std::string::npos)
      << bad.status.message();
  EXPECT_NEAR(bad.at - 0.1, lat + 1e9 / 25e9, 1e-9);
  Done good = move_at(h, fab, -1, 2, 1e9, 1.0);
  EXPECT_TRUE(good.status.ok());
}

// A message whose last packet is lost waits for the RC ACK timeout: with r = 1.7% on both
// NICs, about 3.4% of messages stall; the draws are seeded, so the count is exact.
TEST(FaultInjector, ThermalTailLossesStallMessages) {
  FaultSpec f = fault(FaultType::kThermal, Kind::kCluster, -1, 0, faults::kForever);
  f.thermal.profile = {{0, 40}};
  f.thermal.ack_timeout_s = 1.0;
  Harness h(2, {f});
  h.rt->at(0.1, [&] {
    std::mt19937_64 rng(42);
    double expected = 0;
    for (int node = 0; node < 2; ++node)
      for (int m = 0; m < 2000; ++m)
        if (static_cast<double>(rng() >> 11) * 0x1.0p-53 < 0.017) expected += 1.0;
    TransferFaults t =
        h.inj->transfer_attempts(h.platform->host_of(0), h.platform->host_of(8), 2000);
    EXPECT_FALSE(t.fails);
    EXPECT_DOUBLE_EQ(t.extra_s, expected);
    EXPECT_GT(t.extra_s, 0.02 * 2000);  // ~68 stalls of 1 s
    EXPECT_LT(t.extra_s, 0.05 * 2000);
    // Inside a node nothing crosses a NIC.
    EXPECT_EQ(
        h.inj->transfer_attempts(h.platform->host_of(0), h.platform->host_of(1), 2000).extra_s, 0);
    h.inj->stop();  // a thermal fault without end ticks until stopped
  });
  h.platform->run();
}

// Draws follow a seeded generator in a fixed order: the outcomes are those of mt19937_64(42).
TEST(FaultInjector, RegistrationDrawsAreSeeded) {
  FaultSpec f = fault(FaultType::kRdmaRegistration, Kind::kCluster, -1, 0, faults::kForever);
  f.failure_rate = 0.5;
  f.max_retries = 3;
  f.retry_s = 0.001;
  Harness h(2, {f});
  std::mt19937_64 rng(42);
  h.rt->at(0.1, [&] {
    for (int k = 0; k < 50; ++k) {
      int failures = 0;
      while (failures < 3 && static_cast<double>(rng() >> 11) * 0x1.0p-53 < 0.5) ++failures;
      TransferFaults t = h.inj->transfer_attempts(h.platform->host_of(0), h.platform->host_of(8));
      EXPECT_EQ(t.fails, failures == 3) << k;
      EXPECT_NEAR(t.extra_s, failures * 0.001, 1e-12) << k;
    }
    // Inside a node: no registration, no draw.
    EXPECT_EQ(h.inj->transfer_attempts(h.platform->host_of(0), h.platform->host_of(1)).extra_s, 0);
  });
  h.platform->run();
}

TEST(FaultInjector, TimelineColumnsCountTheBytesOfFlows) {
  FaultSpec f = fault(FaultType::kStorageSlowdown, Kind::kStorage, -1, 0, 5.0);
  f.name = "slow";
  f.bandwidth_factor = 0.5;
  Harness h(2, {f});
  EXPECT_EQ(h.inj->timeline_columns(),
            (std::vector<std::string>{"util_node0_nic", "util_node1_nic", "util_storage_link",
                                      "active_faults"}));
  SimFabric fab(h.platform.get(), h.rt.get());
  fab.set_fault_injector(h.inj.get());
  ASSERT_TRUE(move_at(h, fab, 0, 8, 1e9, 0.1).status.ok());
  // 1e9 bytes over 25 GB/s NICs in a 1 s window: 4% of each.
  EXPECT_EQ(h.inj->sample_timeline(1.0, 1.0),
            (std::vector<std::string>{"0.0400", "0.0400", "0.0000", "slow"}));
  EXPECT_EQ(h.inj->sample_timeline(6.0, 1.0),
            (std::vector<std::string>{"0.0000", "0.0000", "0.0000", ""}));
}

// Executor flows count too: a PP send across nodes as a flow.
TEST(FaultInjector, TimelineCountsExecutorSends) {
  Harness h(2, {fault(FaultType::kLinkDown, Kind::kNic, 1, 50, 60)});
  SimExecutor ex(h.platform.get(), h.rt.get(), placement({{0}, {8}}),
                 fixed({stage(0.010, 0, 0, 5e9), stage(0.010)}));
  ex.set_fault_injector(h.inj.get());
  ASSERT_TRUE(step_at(h, ex, 0.1).status.ok());
  const auto v = h.inj->sample_timeline(1.0, 1.0);
  ASSERT_EQ(v.size(), 3u);  // util_node0_nic, util_node1_nic, active_faults
  EXPECT_EQ(v[0], "0.2000");
  EXPECT_EQ(v[1], "0.2000");
}

}  // namespace
}  // namespace prima::sim
