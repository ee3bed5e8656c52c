// SimExecutor: step times with fixed StepCosts, computed by hand; throttling, pipelining,
// flow-modelled collectives and failures.
#include <gtest/gtest.h>

#include <simgrid/s4u.hpp>

#include "backends/sim/sim_executor.h"
#include "backends/sim/sim_runtime.h"
#include "tests/backends/sim/sim_test_util.h"

namespace prima::sim {
namespace {

struct Harness {
  std::unique_ptr<SimPlatform> platform;
  SimRuntime* rt = nullptr;
  explicit Harness(int nodes) {
    auto p = SimPlatform::create(testing::test_topology(nodes));
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    platform = std::move(p).value();
    rt = new SimRuntime();
  }
  ~Harness() { delete rt; }
};

using testing::placement;

perf::StageCost stage(double compute_s, int allreduces = 0, double ar_bytes = 0,
                      double send_bytes = 0) {
  perf::StageCost c;
  c.compute_s = compute_s;
  c.flops = compute_s * 1e15;
  c.allreduces = allreduces;
  c.allreduce_bytes = ar_bytes;
  c.send_bytes = send_bytes;
  return c;
}

SimCostFns fixed(std::vector<perf::StageCost> stages, double overhead_s) {
  return default_cost_fns([=](const BatchShape&) {
    perf::StepCost c;
    c.stages = stages;
    c.overhead_s = overhead_s;
    return c;
  });
}

StepResult run_one(Harness& h, SimExecutor& ex, Time at = 0) {
  StepResult out;
  out.end_s = -1;
  h.rt->at(at, [&] {
    StepBatch plan;
    plan.step_id = 7;
    ex.launch(plan, [&](const StepResult& r) { out = r; });
  });
  h.platform->run();
  return out;
}

TEST(SimExecutor, SingleGpuStep) {
  Harness h(1);
  SimExecutor ex(h.platform.get(), h.rt, placement({{0}}), fixed({stage(0.010)}, 0.001));
  StepResult r = run_one(h, ex, 1.0);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_DOUBLE_EQ(r.start_s, 1.0);
  EXPECT_NEAR(r.end_s, 1.011, 1e-9);
  EXPECT_NEAR(r.flops, 0.010 * 1e15, 1);
  ASSERT_EQ(r.stage_busy_s.size(), 1u);
  EXPECT_NEAR(r.stage_busy_s[0], 0.011, 1e-9);
  EXPECT_EQ(ex.max_inflight(), 1);
}

TEST(SimExecutor, TensorParallelIntraNodeAnalytic) {
  Harness h(1);
  // TP4, 8 all-reduces of 1 MB on NVLink (100 GB/s, 1 us):
  // each 2*3/4 * 1e6 / 100e9 + 2*3 * 1e-6 = 15 us + 6 us = 21 us.
  SimExecutor ex(h.platform.get(), h.rt, placement({{0, 1, 2, 3}}),
                 fixed({stage(0.010, 8, 1e6)}, 0.0));
  StepResult r = run_one(h, ex);
  ASSERT_TRUE(r.status.ok());
  EXPECT_NEAR(r.end_s, 0.010 + 8 * 21e-6, 1e-9);
  EXPECT_NEAR(r.flops, 4 * 0.010 * 1e15, 1);
  EXPECT_EQ(ex.activities_started(), 1u);
}

TEST(SimExecutor, TensorParallelAsFlowsWhenAnalyticIsOff) {
  Harness h(1);
  SimSpeedups o = unconditional_speedups();
  o.analytic_intra_node_collectives = false;
  o.exclusive_links_analytic = false;  // these NVLinks carry only this ring: flows on request
  SimExecutor ex(h.platform.get(), h.rt, placement({{0, 1}}), fixed({stage(0.010, 4, 1e8)}, 0.0),
                 o);
  StepResult r = run_one(h, ex);
  ASSERT_TRUE(r.status.ok());
  // Latency term 4 x 2*(2-1)*1us analytic, then one ring flow per GPU of 2*1/2*1e8*4 bytes
  // over nvl up + nvl down (2 us) at 100 GB/s.
  EXPECT_NEAR(r.end_s, 0.010 + 4 * 2e-6 + 2e-6 + 4e8 / 100e9, 1e-9);
  EXPECT_EQ(ex.activities_started(), 3u);
}

TEST(SimExecutor, TensorParallelAcrossNodesUsesTheNics) {
  Harness h(2);
  SimExecutor ex(h.platform.get(), h.rt, placement({{0, 8}}), fixed({stage(0.010, 2, 1e8)}, 0.0));
  StepResult r = run_one(h, ex);
  ASSERT_TRUE(r.status.ok());
  // Latency term 2 x 2 x nic 2 us; flows of 2e8 bytes both ways (split duplex), 8 us route.
  EXPECT_NEAR(r.end_s, 0.010 + 2 * 2 * 2e-6 + 8e-6 + 2e8 / 25e9, 1e-9);
}

perf::StageCost ep_stage(double compute_s, int alltoalls, double alltoall_bytes) {
  perf::StageCost c = stage(compute_s);
  c.alltoalls = alltoalls;
  c.alltoall_bytes = alltoall_bytes;
  return c;
}

plan::ReplicaPlacement ep_placement(int first, int gpus) {
  std::vector<DeviceId> d;
  for (int g = 0; g < gpus; ++g) d.push_back(first + g);
  plan::ReplicaPlacement p = placement({d});
  p.tp_group = 1;
  p.all_to_all = true;
  return p;
}

TEST(SimExecutor, ExpertAllToAllInsideANodeIsAnalytic) {
  Harness h(1);
  // EP8 on one node, 4 all-to-all phases moving 8e8 bytes per GPU in all: each phase
  // 2e8 / 100 GB/s NVLink + 1 us.
  SimExecutor ex(h.platform.get(), h.rt, ep_placement(0, 8), fixed({ep_stage(0.010, 4, 8e8)}, 0));
  StepResult r = run_one(h, ex);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_NEAR(r.end_s, 0.010 + 4 * (2e8 / 100e9 + 1e-6), 1e-9);
  EXPECT_EQ(ex.activities_started(), 1u);
}

// EP16 over two nodes, 2 phases, 1.5e8 bytes per GPU spread over its 15 peers (1e7 each):
// node 0 -> node 1 carries 8 x 8 pairs = 6.4e8 bytes through each NIC (full duplex), on the
// 8 us route; the phases' latency terms (nic 2 us each) ride on the compute. As flows, and
// (the links being the stage's alone) as the analytic busiest-link time: the same end.
constexpr double kEp16End = 0.010 + 2 * 2e-6 + 8e-6 + 6.4e8 / 25e9;

StepResult run_ep16(bool analytic, std::uint64_t* activities) {
  Harness h(2);
  SimSpeedups o = unconditional_speedups();
  o.exclusive_links_analytic = analytic;
  SimExecutor ex(h.platform.get(), h.rt, ep_placement(0, 16), fixed({ep_stage(0.010, 2, 1.5e8)}, 0),
                 o);
  StepResult r = run_one(h, ex);
  *activities = ex.activities_started();
  return r;
}

TEST(SimExecutor, ExpertAllToAllOnExclusiveLinksIsTheBusiestLinkTime) {
  std::uint64_t activities = 0;
  StepResult r = run_ep16(true, &activities);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_NEAR(r.end_s, kEp16End, 1e-9);
  EXPECT_EQ(activities, 1u);  // the compute only
}

TEST(SimExecutor, ExpertAllToAllAcrossNodesIsFlowsOnTheNics) {
  std::uint64_t activities = 0;
  StepResult r = run_ep16(false, &activities);
  ASSERT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_NEAR(r.end_s, kEp16End, 1e-9);
  EXPECT_EQ(activities, 3u);  // the compute and the two flows
  // The same volume through the cost model's formula (one phase of 7.5e7 bytes, 8/15 of it
  // leaving each of the node's 8 GPUs): the flows' transfer time twice.
  perf::CostModel cm(model::ModelSpec{}, model::Quantization::kBF16, testing::test_topology(2).gpu,
                     plan::ParallelPlan{}, [] {
                       perf::Efficiency e;
                       e.allreduce_bandwidth = 1;
                       e.allreduce_latency_s = 0;
                       return e;
                     }());
  const auto& node = testing::test_topology(2).node;
  EXPECT_NEAR(2 * (cm.alltoall_time_s(7.5e7, 16, 8, node.nvlink, node.nic) - 2e-6), 6.4e8 / 25e9,
              1e-12);
}

TEST(SimExecutor, PipelineAcrossNodesSendsAFlow) {
  Harness h(2);
  SimExecutor ex(h.platform.get(), h.rt, placement({{0}, {8}}),
                 fixed({stage(0.010, 0, 0, 1e8), stage(0.020)}, 0.001));
  StepResult r = run_one(h, ex);
  ASSERT_TRUE(r.status.ok());
  const double send = 8e-6 + 1e8 / 25e9;
  EXPECT_NEAR(r.end_s, 0.001 + 0.010 + send + 0.020, 1e-9);
  ASSERT_EQ(r.stage_busy_s.size(), 2u);
  EXPECT_NEAR(r.stage_busy_s[0], 0.011 + send, 1e-9);
  EXPECT_NEAR(r.stage_busy_s[1], 0.020, 1e-9);
  EXPECT_EQ(ex.max_inflight(), 2);
}

TEST(SimExecutor, PipelinedStepsOverlap) {
  Harness h(2);
  SimExecutor ex(h.platform.get(), h.rt, placement({{0}, {1}}),
                 fixed({stage(0.010, 0, 0, 1e6), stage(0.010)}, 0.0));
  std::vector<StepResult> rs;
  h.rt->at(0, [&] {
    for (int i = 0; i < 3; ++i) {
      StepBatch p;
      p.step_id = i;
      ex.launch(p, [&](const StepResult& r) { rs.push_back(r); });
    }
  });
  h.platform->run();
  ASSERT_EQ(rs.size(), 3u);
  // Stage 0 takes 10 ms + the analytic NVLink send (1e6/100e9 + 1 us = 11 us).
  const double s0 = 0.010 + 11e-6;
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(rs[i].start_s, i * s0, 1e-9);
    EXPECT_NEAR(rs[i].end_s, (i + 1) * s0 + 0.010, 1e-9);
  }
}

TEST(SimExecutor, ThrottledGpuSlowsTheStage) {
  Harness h(1);
  SimExecutor ex(h.platform.get(), h.rt, placement({{0, 1}}), fixed({stage(0.010)}, 0.001));
  h.platform->host_of(1)->set_pstate(5);  // 50% of peak, not the lead GPU
  StepResult r = run_one(h, ex);
  ASSERT_TRUE(r.status.ok());
  EXPECT_NEAR(r.end_s, 0.020 + 0.001, 1e-9);
}

TEST(SimExecutor, ThrottledGpuSlowsTheStageWithoutAggregation) {
  Harness h(1);
  SimSpeedups o = unconditional_speedups();
  o.aggregate_stage_execs = false;
  SimExecutor ex(h.platform.get(), h.rt, placement({{0, 1}}), fixed({stage(0.010)}, 0.0), o);
  h.platform->host_of(1)->set_pstate(5);
  StepResult r = run_one(h, ex);
  ASSERT_TRUE(r.status.ok());
  EXPECT_NEAR(r.end_s, 0.020, 1e-9);
  EXPECT_EQ(ex.activities_started(), 2u);
}

TEST(SimExecutor, ThrottlingMidStep) {
  Harness h(1);
  SimExecutor ex(h.platform.get(), h.rt, placement({{0}}), fixed({stage(0.010)}, 0.0));
  h.rt->at(0.005, [&] { h.platform->host_of(0)->set_pstate(5); });
  StepResult r = run_one(h, ex);
  ASSERT_TRUE(r.status.ok());
  EXPECT_NEAR(r.end_s, 0.005 + 0.010, 1e-9);  // the second half runs at half speed
}

TEST(SimExecutor, HostOffMidStepFailsTheStep) {
  Harness h(1);
  SimExecutor ex(h.platform.get(), h.rt, placement({{2, 3}}), fixed({stage(0.010)}, 0.0));
  h.rt->at(0.004, [&] { h.platform->host_of(2)->turn_off(); });
  StepResult r = run_one(h, ex);
  EXPECT_FALSE(r.status.ok());
  EXPECT_EQ(r.status.code(), StatusCode::kUnavailable);
  EXPECT_NE(r.status.message().find("gpu2 failed"), std::string::npos) << r.status.message();
  EXPECT_NEAR(r.end_s, 0.004, 1e-9);
}

// The same two with the stage as an Exec instead of a timer (timer_stages off).
TEST(SimExecutor, ThrottlingMidStepAsExec) {
  Harness h(1);
  SimSpeedups o = unconditional_speedups();
  o.timer_stages = false;
  SimExecutor ex(h.platform.get(), h.rt, placement({{0}}), fixed({stage(0.010)}, 0.0), o);
  h.rt->at(0.005, [&] { h.platform->host_of(0)->set_pstate(5); });
  StepResult r = run_one(h, ex);
  ASSERT_TRUE(r.status.ok());
  EXPECT_NEAR(r.end_s, 0.005 + 0.010, 1e-9);
}

TEST(SimExecutor, HostOffMidStepFailsTheStepAsExec) {
  Harness h(1);
  SimSpeedups o = unconditional_speedups();
  o.timer_stages = false;
  SimExecutor ex(h.platform.get(), h.rt, placement({{2, 3}}), fixed({stage(0.010)}, 0.0), o);
  h.rt->at(0.004, [&] { h.platform->host_of(2)->turn_off(); });
  StepResult r = run_one(h, ex);
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("gpu2 failed"), std::string::npos) << r.status.message();
  EXPECT_NEAR(r.end_s, 0.004, 1e-9);
}

// Timer stages follow several speed changes within one step.
TEST(SimExecutor, TimerStageFollowsSpeedChanges) {
  Harness h(1);
  SimExecutor ex(h.platform.get(), h.rt, placement({{0}, {1}}),
                 fixed({stage(0.010), stage(0.010)}, 0.0));
  h.rt->at(0.002, [&] { h.platform->host_of(0)->set_pstate(5); });  // 50%
  h.rt->at(0.004, [&] { h.platform->host_of(0)->set_pstate(0); });  // back to 100%
  h.rt->at(0.012, [&] { h.platform->host_of(1)->set_pstate(7); });  // 30%, stage 1
  StepResult r = run_one(h, ex);
  ASSERT_TRUE(r.status.ok());
  // Stage 0: 2 ms at full, 2 ms at half (1 ms of work), 7 ms at full: ends at 0.011.
  // Stage 1: 1 ms at full, then 9 ms of work at 30%: 30 ms; ends at 0.042.
  EXPECT_NEAR(r.stage_busy_s[0], 0.011, 1e-9);
  EXPECT_NEAR(r.end_s, 0.012 + 0.009 / 0.3, 1e-9);
  EXPECT_EQ(ex.activities_started(), 2u);
}

TEST(SimExecutor, HostAlreadyOffFailsWithoutCrashing) {
  Harness h(1);
  SimExecutor ex(h.platform.get(), h.rt, placement({{2, 3}}), fixed({stage(0.010)}, 0.0));
  h.platform->host_of(3)->turn_off();
  StepResult r = run_one(h, ex);
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("gpu3"), std::string::npos) << r.status.message();
  // The executor keeps working once the GPU is back.
  h.platform->host_of(3)->turn_on();
  StepResult r2 = run_one(h, ex, 1.0);
  EXPECT_TRUE(r2.status.ok()) << r2.status.to_string();
}

TEST(SimExecutor, LinkOffDuringSendFailsNamingTheLink) {
  Harness h(2);
  SimSpeedups o = unconditional_speedups();
  o.exclusive_links_analytic = false;  // an analytic send would not see the link go off
  SimExecutor ex(h.platform.get(), h.rt, placement({{0}, {8}}),
                 fixed({stage(0.010, 0, 0, 1e9), stage(0.010)}, 0.0), o);
  h.rt->at(0.020, [&] {
    h.platform->nic_of(0)->get_link_up()->turn_off();
    h.platform->nic_of(0)->get_link_down()->turn_off();
  });
  StepResult r = run_one(h, ex);
  EXPECT_FALSE(r.status.ok());
  EXPECT_NE(r.status.message().find("node0_nic"), std::string::npos) << r.status.message();
}

// exclusive_links_analytic: flows whose links no other flow uses ride on the compute Exec and
// take the lone-flow time; the flow-modelled run of the same step agrees.
TEST(SimExecutor, ExclusiveFlowsAreAnalyticWithTheFlowTime) {
  Harness h(2);
  struct Case {
    std::vector<std::vector<DeviceId>> devices;
    std::vector<perf::StageCost> stages;
    std::uint64_t flow_activities, analytic_activities;
    double by_hand_s;
  };
  const double ring = 2 * 2 * 2e-6 + 8e-6 + 2e8 / 25e9;  // latency terms + flows both ways
  const double send = 8e-6 + 1e8 / 25e9;
  const std::vector<Case> cases = {
      // TP2 across two nodes: Exec + 2 ring flows, or 1 Exec.
      {{{0, 8}}, {stage(0.010, 2, 1e8)}, 3, 1, 0.001 + 0.010 + ring},
      // PP2 across two nodes: Exec + send + Exec, or 2 Execs.
      {{{0}, {8}}, {stage(0.010, 0, 0, 1e8), stage(0.020)}, 3, 2, 0.001 + 0.010 + send + 0.020},
  };
  for (const Case& c : cases) {
    StepResult flows, analytic;
    {
      SimSpeedups o = unconditional_speedups();
      o.exclusive_links_analytic = false;
      SimExecutor ex(h.platform.get(), h.rt, placement(c.devices), fixed(c.stages, 0.001), o);
      flows = run_one(h, ex, h.rt->now());
      EXPECT_EQ(ex.activities_started(), c.flow_activities);
    }
    {
      SimExecutor ex(h.platform.get(), h.rt, placement(c.devices), fixed(c.stages, 0.001));
      analytic = run_one(h, ex, h.rt->now());
      EXPECT_EQ(ex.activities_started(), c.analytic_activities);
    }
    ASSERT_TRUE(flows.status.ok());
    ASSERT_TRUE(analytic.status.ok());
    EXPECT_NEAR(flows.end_s - flows.start_s, c.by_hand_s, 1e-9);
    EXPECT_NEAR(analytic.end_s - analytic.start_s, c.by_hand_s, 1e-9);
    for (size_t s = 0; s < c.stages.size(); ++s)
      EXPECT_NEAR(analytic.stage_busy_s[s], flows.stage_busy_s[s], 1e-9);
  }
}

// Two replicas whose sends leave through the same NIC: those flows share links and stay flows.
TEST(SimExecutor, SharedLinksKeepFlows) {
  Harness h(2);
  auto costs = fixed({stage(0.010, 0, 0, 1e8), stage(0.010)}, 0.0);
  SimExecutor a(h.platform.get(), h.rt, placement({{0}, {8}}), costs);
  SimExecutor b(h.platform.get(), h.rt, placement({{1}, {9}}), costs);
  StepResult ra, rb;
  h.rt->at(0, [&] {
    a.launch(StepBatch{}, [&](const StepResult& r) { ra = r; });
    b.launch(StepBatch{}, [&](const StepResult& r) { rb = r; });
  });
  h.platform->run();
  EXPECT_EQ(a.activities_started(), 3u);
  EXPECT_EQ(b.activities_started(), 3u);
  // Both sends share the NIC: 12.5 GB/s each.
  EXPECT_NEAR(ra.end_s, 0.010 + 8e-6 + 1e8 / 12.5e9 + 0.010, 1e-9);
  EXPECT_NEAR(rb.end_s, ra.end_s, 1e-9);
}

// A link whose bandwidth changes (drift, faults) is no longer exclusive: later steps use flows
// and see the new bandwidth.
TEST(SimExecutor, LinkChangeTurnsTheShortcutOff) {
  Harness h(2);
  SimExecutor ex(h.platform.get(), h.rt, placement({{0}, {8}}),
                 fixed({stage(0.010, 0, 0, 1e8), stage(0.010)}, 0.0));
  StepResult r1 = run_one(h, ex);
  EXPECT_EQ(ex.activities_started(), 2u);
  EXPECT_NEAR(r1.end_s, 0.020 + 8e-6 + 1e8 / 25e9, 1e-9);
  h.platform->nic_of(0)->get_link_up()->set_bandwidth(12.5e9);
  h.platform->nic_of(0)->get_link_down()->set_bandwidth(12.5e9);
  StepResult r2 = run_one(h, ex, h.rt->now());
  EXPECT_EQ(ex.activities_started(), 5u);
  EXPECT_NEAR(r2.end_s - r2.start_s, 0.020 + 8e-6 + 1e8 / 12.5e9, 1e-9);
}

}  // namespace
}  // namespace prima::sim

namespace prima::sim {
namespace {

// The CostModel adapter: a sim step of Llama-2-7B on one GPU takes the cost model's time
// (no communication on a single GPU).
TEST(SimExecutor, CostModelStepMatchesStepTime) {
  Harness h(1);
  auto m = model::model_by_name("Llama-2-7B");
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  plan::ParallelPlan pp;
  perf::CostModel cm(*m, model::Quantization::kFP16, h.platform->topology().gpu, pp,
                     perf::Efficiency{});
  SimExecutor ex(h.platform.get(), h.rt, placement({{0}}), cost_fns_from(cm));
  StepBatch plan;
  for (int i = 0; i < 8; ++i) plan.add_seq(SeqWork{static_cast<RequestId>(i), 1, 512, false, true});
  const double expect = cm.step_time_s(plan.shape, {}, {});
  StepResult out;
  h.rt->at(0, [&] { ex.launch(plan, [&](const StepResult& r) { out = r; }); });
  h.platform->run();
  ASSERT_TRUE(out.status.ok());
  EXPECT_GT(expect, 0);
  EXPECT_NEAR(out.end_s, expect, 1e-9 + expect * 1e-9);
}

}  // namespace
}  // namespace prima::sim
