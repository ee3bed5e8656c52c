// Speed of the sim backend: simulated seconds per wall second for a closed loop of steps
// (each replica launches its next step when one finishes). Prints the ratio; asserts only a
// loose floor, since the test machines are shared and noisy.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "backends/sim/sim_executor.h"
#include "backends/sim/sim_runtime.h"
#include "tests/backends/sim/sim_test_util.h"

namespace prima::sim {
namespace {

struct Loop {
  SimExecutor* ex;
  int left;
  void next() {
    if (left-- <= 0) return;
    StepPlan p;
    ex->launch(p, [this](const StepResult& r) { next(); });
  }
};

// replicas x (tp x pp) GPUs, consecutive; `steps` steps per replica in flight up to pp.
double speed(int nodes, int tp, int pp, int steps, double step_s, double send_bytes,
             double ar_bytes, std::uint64_t* activities) {
  auto platform = SimPlatform::create(testing::test_topology(nodes));
  EXPECT_TRUE(platform.ok());
  SimRuntime rt;
  std::vector<perf::StageCost> stages(pp);
  for (auto& s : stages) {
    s.compute_s = step_s / pp;
    s.allreduces = tp > 1 ? 8 : 0;
    s.allreduce_bytes = ar_bytes;
    s.send_bytes = send_bytes;
  }
  stages.back().send_bytes = 0;
  auto costs = default_cost_fns([stages](const BatchShape&) {
    perf::StepCost c;
    c.stages = stages;
    c.overhead_s = 1e-3;
    return c;
  });
  const int replicas = (*platform)->num_gpus() / (tp * pp);
  std::vector<std::unique_ptr<SimExecutor>> exs;
  std::vector<Loop> loops;
  loops.reserve(replicas * pp);
  for (int r = 0; r < replicas; ++r) {
    plan::ReplicaPlacement pl;
    pl.replica = r;
    for (int s = 0; s < pp; ++s) {
      pl.devices.emplace_back();
      for (int k = 0; k < tp; ++k) pl.devices.back().push_back((r * pp + s) * tp + k);
    }
    exs.push_back(std::make_unique<SimExecutor>(platform->get(), &rt, pl, costs));
    for (int s = 0; s < pp; ++s) loops.push_back(Loop{exs.back().get(), steps / pp});
  }
  for (auto& l : loops) rt.at(0, [&l] { l.next(); });
  auto t0 = std::chrono::steady_clock::now();
  (*platform)->run();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  *activities = 0;
  for (auto& e : exs) *activities += e->activities_started();
  return rt.now() / wall;
}

TEST(SimSpeed, EightGpusOneReplica) {
  std::uint64_t acts = 0;
  double x = speed(1, 8, 1, 20000, 0.02, 0, 16e6, &acts);
  std::printf("8 GPUs TP8: %.0fx real time, %llu activities\n", x, (unsigned long long)acts);
  EXPECT_GT(x, 1000);
}

TEST(SimSpeed, SixtyFourGpusWithContention) {
  std::uint64_t acts = 0;
  // TP4 x PP2 replicas whose stages sit on different nodes' halves: PP sends share NICs.
  double x = speed(8, 4, 2, 20000, 0.02, 64e6, 16e6, &acts);
  std::printf("64 GPUs TP4xPP2: %.0fx real time, %llu activities\n", x, (unsigned long long)acts);
  EXPECT_GT(x, 50);
}

TEST(SimSpeed, ThousandGpus) {
  std::uint64_t acts = 0;
  // TP8 x PP2 replicas over 128 nodes: stage-to-stage sends cross the fat tree.
  double x = speed(128, 8, 2, 1000, 0.02, 64e6, 16e6, &acts);
  std::printf("1024 GPUs TP8xPP2: %.0fx real time, %llu activities\n", x, (unsigned long long)acts);
  EXPECT_GT(x, 2);
}

}  // namespace
}  // namespace prima::sim
