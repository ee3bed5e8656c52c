// SimExecutor with the closed-form pipeline (SimSpeedups::closed_form_pipeline): steps timed
// entirely at launch must give bit-identical step results (start, end, busy time per stage)
// to the event-driven stages, with the pipeline full (where chaining does not apply), after
// idle gaps, and mixed with steps whose sends are SimGrid flows (those run event-driven);
// and an executor destroyed with such steps in flight leaves no timer behind.
#include <gtest/gtest.h>

#include <simgrid/s4u.hpp>

#include "backends/sim/sim_executor.h"
#include "backends/sim/sim_runtime.h"
#include "tests/backends/sim/sim_test_util.h"
#include "tests/backends/sim/step_driver.h"

namespace prima::sim {
namespace {

perf::StageCost stage(double compute_s, double send_bytes) {
  perf::StageCost c;
  c.compute_s = compute_s;
  c.flops = compute_s * 1e15;
  c.send_bytes = send_bytes;
  return c;
}

// An uneven 4-stage pipeline (stage 1 is the bottleneck); the batch size varies the cost. With
// `flow_every` > 0, every flow_every-th batch size sends 1 MB between stages (a flow when the
// executor models intra-node sends as flows), the others send nothing.
SimCostFns costs(int flow_every) {
  return default_cost_fns([flow_every](const BatchShape& b) {
    const double k = 1.0 + 0.01 * static_cast<double>(b.num_seqs);
    const double send = flow_every > 0 && b.num_seqs % flow_every == 0 ? 1e6 : 0.0;
    perf::StepCost c;
    c.stages = {stage(0.010 * k, send), stage(0.030 * k, send), stage(0.005 * k, send),
                stage(0.020 * k, 0)};
    c.overhead_s = 0.001;
    return c;
  });
}

plan::ReplicaPlacement placement(DeviceId first) {
  plan::ReplicaPlacement p;
  for (int s = 0; s < 4; ++s) p.devices.push_back({first + s});
  return p;
}

using Driver = testing::StepDriver;

void expect_same(const Driver& x, const Driver& y, size_t steps) {
  ASSERT_EQ(x.results.size(), steps);
  ASSERT_EQ(y.results.size(), steps);
  for (size_t i = 0; i < steps; ++i) {
    const StepResult& a = x.results[i];
    const StepResult& b = y.results[i];
    EXPECT_TRUE(a.status.ok());
    EXPECT_EQ(a.start_s, b.start_s) << "step " << i;
    EXPECT_EQ(a.end_s, b.end_s) << "step " << i;
    ASSERT_EQ(a.stage_busy_s.size(), 4u);
    for (size_t s = 0; s < 4; ++s) EXPECT_EQ(a.stage_busy_s[s], b.stage_busy_s[s]) << i;
    EXPECT_EQ(a.flops, b.flops);
  }
}

// Runs two executors with the given options side by side (same costs, same launches: a
// full pipeline, then after an idle gap single steps) and returns their drivers' results.
void run_pair(const SimSpeedups& x_opts, const SimSpeedups& y_opts, int flow_every, Driver* dx,
              Driver* dy) {
  auto p = SimPlatform::create(testing::test_topology(1));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  std::unique_ptr<SimPlatform> platform = std::move(p).value();
  SimRuntime rt;
  SimExecutor x(platform.get(), &rt, placement(0), costs(flow_every), x_opts);
  SimExecutor y(platform.get(), &rt, placement(4), costs(flow_every), y_opts);
  dx->ex = &x;
  dy->ex = &y;
  dx->total = dy->total = 40;
  rt.at(0.0, [&] {
    for (Driver* d : {dx, dy})
      for (int i = 0; i < 4; ++i) d->launch();
  });
  rt.at(10.0, [&] {  // after an idle gap: two lone steps (one launched at the other's end)
    dx->total = dy->total = 42;
    for (Driver* d : {dx, dy}) d->launch();
  });
  rt.at(10.5, [&] {  // then two back to back
    dx->total = dy->total = 44;
    for (Driver* d : {dx, dy})
      for (int i = 0; i < 2; ++i) d->launch();
  });
  platform->run();
  EXPECT_EQ(x.activities_started(), y.activities_started());
  dx->ex = dy->ex = nullptr;
}

TEST(ClosedFormPipeline, SameResultsAsEventDrivenStagesWithTheBottleneckPacing) {
  SimSpeedups closed = unconditional_speedups();
  closed.chain_stages = true;
  closed.closed_form_pipeline = true;
  Driver a, b;
  run_pair(closed, unconditional_speedups(), 0, &a, &b);
  expect_same(a, b, 44);
  // A full pipeline: consecutive ends are paced by the bottleneck (stage 1, >= 30 ms) less
  // the difference of two steps' last stages (<= 1 ms).
  for (size_t i = 4; i < 40; ++i)
    EXPECT_GE(a.results[i].end_s - a.results[i - 1].end_s, 0.030 - 0.001 - 1e-9) << i;
  // The first step after the gap ran alone: end - start = the sum of its stages.
  const double k = 1.0 + 0.01 * static_cast<double>((40 * 7) % 11);
  EXPECT_NEAR(a.results[40].end_s - a.results[40].start_s, 0.001 + 0.065 * k, 1e-9);
  EXPECT_EQ(a.results[40].start_s, 10.0);
}

TEST(ClosedFormPipeline, SameResultsAsChainedStages) {
  SimSpeedups closed = unconditional_speedups(), chained = unconditional_speedups();
  closed.chain_stages = chained.chain_stages = true;
  closed.closed_form_pipeline = true;
  Driver a, b;
  run_pair(closed, chained, 0, &a, &b);
  expect_same(a, b, 44);
}

TEST(ClosedFormPipeline, MixedWithStepsWhoseSendsAreFlows) {
  // Intra-node sends as flows, never costed analytically: every third batch size sends
  // bytes, so its steps run event-driven among steps timed at launch.
  SimSpeedups flows = unconditional_speedups();
  flows.analytic_intra_node_collectives = false;
  flows.exclusive_links_analytic = false;
  SimSpeedups closed = flows;
  closed.chain_stages = true;
  closed.closed_form_pipeline = true;
  Driver a, b;
  run_pair(closed, flows, 3, &a, &b);
  expect_same(a, b, 44);
}

TEST(ClosedFormPipeline, DestroyedWithStepsInFlight) {
  auto p = SimPlatform::create(testing::test_topology(1));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  std::unique_ptr<SimPlatform> platform = std::move(p).value();
  SimRuntime rt;
  SimSpeedups closed = unconditional_speedups();
  closed.chain_stages = true;
  closed.closed_form_pipeline = true;
  auto ex = std::make_unique<SimExecutor>(platform.get(), &rt, placement(0), costs(0), closed);
  int done = 0;
  rt.at(0.0, [&] {
    for (int i = 0; i < 4; ++i) {
      StepBatch s;
      s.step_id = static_cast<std::uint64_t>(i);
      ex->launch(s, [&done](const StepResult&) { ++done; });
    }
  });
  platform->run_until(0.08);  // the first step ended (66 ms), three are in flight
  EXPECT_EQ(done, 1);
  ex.reset();
  bool later = false;
  rt.at(1.0, [&] { later = true; });
  platform->run();  // would call into the destroyed executor if its timers were left
  EXPECT_TRUE(later);
  EXPECT_EQ(done, 1);
}

}  // namespace
}  // namespace prima::sim
