// Token sampling over SmolLM2's 49,152-entry vocabulary (backends/real/sampler.h): greedy,
// plain temperature, top-p, top-k, and both. Logits: a fixed draw shaped like a language
// model's (a Gaussian body, sd 2.5, and a few dozen strong candidates), the same every run.
// Run: build/bench/prima_bench_micro --benchmark_filter=SampleToken
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>
#include <vector>

#include "backends/real/sampler.h"

namespace {

std::vector<float> lm_like_logits(int vocab) {
  std::mt19937 rng(42);
  std::normal_distribution<float> body(0.f, 2.5f);
  std::vector<float> l(vocab);
  for (float& x : l) x = body(rng);
  std::uniform_int_distribution<int> pick(0, vocab - 1);
  for (int i = 0; i < 40; ++i) l[pick(rng)] = 12.f + 0.2f * i;
  return l;
}

// state.range(0): 0 greedy, 1 temperature 1, 2 top_p 0.9, 3 top_k 50, 4 top_k 50 + top_p 0.9.
void BM_SampleToken(benchmark::State& state) {
  const int vocab = 49152;
  const std::vector<float> l = lm_like_logits(vocab);
  prima::SamplingParams p;
  p.seed = 7;
  p.temperature = state.range(0) == 0 ? 0.0 : 1.0;
  if (state.range(0) == 2 || state.range(0) == 4) p.top_p = 0.9;
  if (state.range(0) >= 3) p.top_k = 50;
  std::vector<std::pair<float, int>> scratch;
  std::int64_t pos = 0;
  for (auto _ : state)
    benchmark::DoNotOptimize(prima::real::sample_token(l.data(), vocab, p, 1, pos++, &scratch));
}
BENCHMARK(BM_SampleToken)->DenseRange(0, 4)->Unit(benchmark::kMicrosecond);

}  // namespace
