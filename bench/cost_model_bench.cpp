// Google Benchmark: CostModel::step and step_time_s on Llama-2-70B fp16, TP4 x PP2 on A100,
// with a 256-sequence batch (the per-step cost the simulator pays on every scheduled step).
#include <benchmark/benchmark.h>

#include "engine/perf/cost_model.h"

namespace {

using namespace prima;

perf::CostModel make_model() {
  plan::ParallelPlan p;
  p.tensor_parallel = 4;
  p.pipeline_parallel = 2;
  return perf::CostModel(*model::model_by_name("llama-2-70b"), model::Quantization::kFP16,
                         *plan::gpu_by_name("A100-SXM4-80GB"), p, perf::Efficiency{});
}

// 256 sequences: 8 prefill chunks of 512 tokens, 248 decoding sequences at contexts 100..2700.
BatchShape mixed_batch() {
  BatchShape b;
  for (int i = 0; i < 256; ++i) {
    if (i < 8)
      b.add({RequestId(i), 512, 512 * (1 + i % 4), true, i % 4 == 3});
    else
      b.add({RequestId(i), 1, 100 + 10 * i, false, true});
  }
  return b;
}

void BM_CostModelStep(benchmark::State& state) {
  const perf::CostModel cm = make_model();
  const BatchShape b = mixed_batch();
  for (auto _ : state) benchmark::DoNotOptimize(cm.step(b));
}
BENCHMARK(BM_CostModelStep);

void BM_CostModelStepTime(benchmark::State& state) {
  const perf::CostModel cm = make_model();
  const BatchShape b = mixed_batch();
  const plan::LinkSpec nvlink{300e9, 2e-6}, ib{25e9, 1e-6};
  for (auto _ : state) benchmark::DoNotOptimize(cm.step_time_s(b, nvlink, ib));
}
BENCHMARK(BM_CostModelStepTime);

}  // namespace
