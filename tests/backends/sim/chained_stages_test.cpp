// SimExecutor with chained and deferred stage ends (SimSpeedups::chain_stages): the same
// steps on two replicas of the same shape, one with chaining and one without, in the same
// simulation, must give bit-identical step results (start, end, busy time per stage), with
// fewer timer events; and the times follow the pipeline (bottleneck pacing, lone steps).
#include <gtest/gtest.h>

#include <algorithm>
#include <simgrid/s4u.hpp>

#include "backends/sim/sim_executor.h"
#include "backends/sim/sim_runtime.h"
#include "tests/backends/sim/sim_test_util.h"

namespace prima::sim {
namespace {

perf::StageCost stage(double compute_s) {
  perf::StageCost c;
  c.compute_s = compute_s;
  c.flops = compute_s * 1e15;
  return c;
}

// A uneven 4-stage pipeline (stage 1 is the bottleneck); the step id picks a slightly
// different cost so steps are not all alike.
SimCostFns costs() {
  return default_cost_fns([](const BatchShape& b) {
    const double k = 1.0 + 0.01 * static_cast<double>(b.num_seqs);
    perf::StepCost c;
    c.stages = {stage(0.010 * k), stage(0.030 * k), stage(0.005 * k), stage(0.020 * k)};
    c.overhead_s = 0.001;
    return c;
  });
}

plan::ReplicaPlacement placement(DeviceId first) {
  plan::ReplicaPlacement p;
  for (int s = 0; s < 4; ++s) p.devices.push_back({first + s});
  return p;
}

// Drives one executor like a replica: `burst` steps at t0, then one new step whenever a
// step ends, until `total` steps ran; plus a late step after an idle gap.
struct Driver {
  SimExecutor* ex = nullptr;
  Runtime* rt = nullptr;
  int launched = 0;
  int total = 0;
  std::vector<StepResult> results;
  void launch() {
    StepBatch p;
    p.step_id = static_cast<std::uint64_t>(launched);
    p.shape.num_seqs = launched % 5;
    ++launched;
    ex->launch(p, [this](const StepResult& r) {
      results.push_back(r);
      if (launched < total) launch();
    });
  }
};

TEST(ChainedStages, SameResultsAsUnchainedAndPacedByTheBottleneck) {
  auto p = SimPlatform::create(testing::test_topology(1));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  std::unique_ptr<SimPlatform> platform = std::move(p).value();
  SimRuntime rt;
  SimSpeedups chained = unconditional_speedups();
  chained.chain_stages = true;
  SimExecutor a(platform.get(), &rt, placement(0), costs(), chained);
  SimExecutor b(platform.get(), &rt, placement(4), costs(), unconditional_speedups());
  Driver da{&a, &rt, 0, 12, {}}, db{&b, &rt, 0, 12, {}};
  rt.at(0.0, [&] {
    for (Driver* d : {&da, &db})
      for (int i = 0; i < 3; ++i) d->launch();
  });
  // After an idle gap, single steps (each crosses free stages: fully chained).
  rt.at(5.0, [&] {
    da.total = db.total = 14;
    da.launch();
    db.launch();
  });
  platform->run();

  ASSERT_EQ(da.results.size(), 14u);
  ASSERT_EQ(db.results.size(), 14u);
  for (size_t i = 0; i < da.results.size(); ++i) {
    const StepResult& x = da.results[i];
    const StepResult& y = db.results[i];
    EXPECT_TRUE(x.status.ok());
    EXPECT_EQ(x.start_s, y.start_s) << "step " << i;
    EXPECT_EQ(x.end_s, y.end_s) << "step " << i;
    ASSERT_EQ(x.stage_busy_s.size(), 4u);
    for (size_t s = 0; s < 4; ++s) EXPECT_EQ(x.stage_busy_s[s], y.stage_busy_s[s]);
  }
  // The bottleneck (stage 1, >= 30 ms) paces the back-to-back steps: consecutive ends are
  // at least 30 ms apart, less the difference of their last two stages (<= 1 ms); the late
  // steps run alone (end - start = the sum of their stages).
  for (size_t i = 1; i < 12; ++i)
    EXPECT_GE(da.results[i].end_s - da.results[i - 1].end_s, 0.030 - 0.001 - 1e-9);
  for (size_t i = 12; i < 14; ++i) {
    const double k = 1.0 + 0.01 * static_cast<double>(i % 5);
    EXPECT_NEAR(da.results[i].end_s - da.results[i].start_s, 0.001 + 0.065 * k, 1e-9);
  }
  // Chained or not, every stage counts as one activity.
  EXPECT_EQ(a.activities_started(), b.activities_started());
}

}  // namespace
}  // namespace prima::sim
