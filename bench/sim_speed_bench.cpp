// Google Benchmark: speed of the sim backend.
// A closed loop of steps on SimExecutors (each replica launches its next step when one ends);
// the counter sim_speedup is simulated seconds per wall second. No assertions: speed figures
// belong here, not in unit tests.
//
// SimGrid allows one engine per process: every case shares one 128-node platform (1024 GPUs)
// and uses the GPUs of its first nodes; the simulated clock keeps running across cases.
#include <benchmark/benchmark.h>

#include <chrono>
#include <memory>
#include <vector>

#include "backends/sim/platform.h"
#include "backends/sim/sim_executor.h"
#include "backends/sim/sim_runtime.h"

namespace {

using namespace prima;
using namespace prima::sim;

// Round figures: GPU 1 PFLOP/s; NVLink 100 GB/s, 1 us; NIC and fabric 25 GB/s.
plan::Topology bench_topology(int nodes) {
  plan::Topology t;
  t.name = "bench";
  t.gpu.name = "BENCH-GPU";
  t.gpu.bf16_flops = 1e15;
  t.gpu.fp16_flops = 1e15;
  t.gpu.hbm_bytes = 80e9;
  t.gpu.hbm_bw_Bps = 2e12;
  t.node.gpus = 8;
  t.node.nvlink = {100e9, 1e-6};
  t.node.pcie = {32e9, 1e-6};
  t.node.nic = {25e9, 2e-6};
  t.nodes = nodes;
  t.fabric.link = {25e9, 1e-6};
  t.storage.type = "bench";
  t.storage.read_bandwidth_Bps = 50e9;
  t.storage.latency_s = 10e-6;
  return t;
}

struct Shared {
  std::unique_ptr<SimPlatform> platform;
  SimRuntime rt;
};
Shared& shared() {
  static Shared* s = [] {
    auto p = SimPlatform::create(bench_topology(128));
    if (!p.ok()) std::abort();
    auto* sh = new Shared();  // never destroyed: SimGrid tears down after static destructors
    sh->platform = std::move(*p);
    return sh;
  }();
  return *s;
}

struct Loop {
  SimExecutor* ex;
  int left;
  void next() {
    if (left-- <= 0) return;
    StepBatch p;
    ex->launch(p, [this](const StepResult&) { next(); });
  }
};

// GPUs 0 .. gpus-1 as replicas of tp x pp (consecutive devices); `steps` steps per replica.
void run_loop(benchmark::State& state, int gpus, int tp, int pp, int steps, double send_bytes,
              SimSpeedups options) {
  Shared& sh = shared();
  const double step_s = 0.02, ar_bytes = 16e6;
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
  double sim_s = 0, wall_s = 0, activities = 0;
  for (auto _ : state) {
    const int replicas = gpus / (tp * pp);
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
      exs.push_back(std::make_unique<SimExecutor>(sh.platform.get(), &sh.rt, pl, costs, options));
      for (int s = 0; s < pp; ++s) loops.push_back(Loop{exs.back().get(), steps / pp});
    }
    const double t0 = sh.rt.now();
    for (auto& l : loops) sh.rt.at(t0, [&l] { l.next(); });
    const auto w0 = std::chrono::steady_clock::now();
    sh.platform->run();
    wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    sim_s += sh.rt.now() - t0;
    for (auto& e : exs) activities += double(e->activities_started());
  }
  state.counters["sim_speedup"] = wall_s > 0 ? sim_s / wall_s : 0;
  state.counters["activities"] = benchmark::Counter(activities, benchmark::Counter::kAvgIterations);
}

// 8 GPUs, one TP8 replica (all-reduces inside one node).
void BM_SimSpeed_8Gpus_TP8(benchmark::State& state) {
  run_loop(state, 8, 8, 1, 20000, 0, unconditional_speedups());
}
BENCHMARK(BM_SimSpeed_8Gpus_TP8)->Unit(benchmark::kMillisecond)->Iterations(1);

// 64 GPUs, TP4 x PP2 replicas whose two stages share a node (PP sends over NVLink).
void BM_SimSpeed_64Gpus_TP4PP2(benchmark::State& state) {
  run_loop(state, 64, 4, 2, 20000, 64e6, unconditional_speedups());
}
BENCHMARK(BM_SimSpeed_64Gpus_TP4PP2)->Unit(benchmark::kMillisecond)->Iterations(1);

// 60 GPUs, TP2 x PP5 replicas straddling nodes, full pipelines (five steps in flight per
// replica): event-driven stages, chained stages (what the simulation used before the
// closed-form pipeline; chaining does not apply to a full pipeline), and steps timed at
// launch (SimSpeedups::closed_form_pipeline, what the simulation uses now).
void BM_SimSpeed_60Gpus_TP2PP5_Full(benchmark::State& state) {
  run_loop(state, 60, 2, 5, 20000, 64e6, unconditional_speedups());
}
BENCHMARK(BM_SimSpeed_60Gpus_TP2PP5_Full)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_SimSpeed_60Gpus_TP2PP5_Full_Chained(benchmark::State& state) {
  SimSpeedups o = unconditional_speedups();
  o.chain_stages = true;
  run_loop(state, 60, 2, 5, 20000, 64e6, o);
}
BENCHMARK(BM_SimSpeed_60Gpus_TP2PP5_Full_Chained)->Unit(benchmark::kMillisecond)->Iterations(1);

void BM_SimSpeed_60Gpus_TP2PP5_Full_ClosedForm(benchmark::State& state) {
  SimSpeedups o = unconditional_speedups();
  o.chain_stages = true;
  o.closed_form_pipeline = true;
  run_loop(state, 60, 2, 5, 20000, 64e6, o);
}
BENCHMARK(BM_SimSpeed_60Gpus_TP2PP5_Full_ClosedForm)->Unit(benchmark::kMillisecond)->Iterations(1);

// 1024 GPUs, TP8 x PP2 replicas over 128 nodes: stage-to-stage sends cross the fat tree.
void BM_SimSpeed_1024Gpus_TP8PP2(benchmark::State& state) {
  run_loop(state, 1024, 8, 2, 1000, 64e6, unconditional_speedups());
}
BENCHMARK(BM_SimSpeed_1024Gpus_TP8PP2)->Unit(benchmark::kMillisecond)->Iterations(1);

// The same with every flow simulated (no analytic shortcut for exclusive links).
void BM_SimSpeed_1024Gpus_TP8PP2_Flows(benchmark::State& state) {
  SimSpeedups o = unconditional_speedups();
  o.exclusive_links_analytic = false;
  run_loop(state, 1024, 8, 2, 1000, 64e6, o);
}
BENCHMARK(BM_SimSpeed_1024Gpus_TP8PP2_Flows)->Unit(benchmark::kMillisecond)->Iterations(1);

}  // namespace
