// Google Benchmark: one routing decision over 32 replicas (target <= 2 us), per policy.
// Replicas hold different loads; the runtime never runs, so the loads stay fixed.
#include <benchmark/benchmark.h>

#include <memory>
#include <vector>

#include "engine/cluster/router.h"

namespace {

using namespace prima;

struct NullRuntime : Runtime {
  Time now() const override { return 0; }
  TimerId at(Time, std::function<void()>) override { return 1; }
  void cancel(TimerId) override {}
  void post(std::function<void()>) override {}
};
struct NullExecutor : Executor {
  void launch(const StepBatch&, std::function<void(const StepResult&)>) override {}
};

void BM_RouterPick(benchmark::State& state) {
  constexpr int kReplicas = 32;
  NullRuntime rt;
  NullExecutor ex;
  std::vector<std::unique_ptr<cluster::Replica>> reps;
  std::vector<cluster::Replica*> ptrs;
  std::vector<std::unique_ptr<Sequence>> load;
  for (int i = 0; i < kReplicas; ++i) {
    reps.push_back(std::make_unique<cluster::Replica>(i, 1, &rt, &ex, sched::SchedulerOptions{},
                                                      100000, nullptr));
    ptrs.push_back(reps.back().get());
    for (int k = 0; k < 1 + (i * 7) % 5; ++k) {
      load.push_back(std::make_unique<Sequence>());
      load.back()->req.prompt_tokens = 100 + 13 * i;
      load.back()->req.max_output_tokens = 50;
      reps.back()->submit(load.back().get());
    }
  }
  cluster::Router router(static_cast<cluster::RoutingPolicy>(state.range(0)), 1, 4096);
  Sequence s;
  s.req.prompt_tokens = 200;
  s.req.max_output_tokens = 100;
  s.req.prefix_tokens = 200;
  std::uint64_t group = 0;
  for (auto _ : state) {
    s.req.prefix_group = 1 + (group++ % 64);
    benchmark::DoNotOptimize(router.pick(ptrs, s));
  }
  state.SetLabel(cluster::routing_policy_names()[state.range(0)]);
}
BENCHMARK(BM_RouterPick)->DenseRange(0, 3);

}  // namespace
