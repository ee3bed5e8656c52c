// Micro-benchmarks of the CPU kernels (kernels/cpu/): quantized matmul at SmolLM2-135M's
// shapes for decode (n = 1, reported as weight GB/s) and prefill (n = 8, 64, GFLOP/s), with 1
// and 2 threads, dispatched (AVX2, with VNNI where present), plain AVX2 and portable; thread-pool
// dispatch overhead; decode attention. Run: build/bench/prima_bench_micro
// --benchmark_filter='Kernel'.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/packed.h"

namespace prima::kernels {
namespace {

ThreadPool& pool_of(int threads) {
  static std::map<int, std::unique_ptr<ThreadPool>> pools;
  auto& p = pools[threads];
  if (!p) p = std::make_unique<ThreadPool>(threads);
  return *p;
}

std::vector<float> randn(std::size_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// args: ggml type, rows, cols, n, threads, kernel set
void BM_KernelMatmul(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const std::int64_t rows = state.range(1), cols = state.range(2), n = state.range(3);
  const int threads = static_cast<int>(state.range(4));
  std::vector<std::uint8_t> w(row_bytes(type, cols) * std::size_t(rows));
  {
    const auto f = randn(std::size_t(cols), 1);
    for (std::int64_t r = 0; r < rows; ++r)  // distinct rows without a rows*cols float buffer
      quantize_row(type, f.data(), w.data() + std::size_t(r) * row_bytes(type, cols), cols);
    std::mt19937 rng(2);  // perturb the nibbles/bytes so rows differ
    for (std::size_t i = 0; i < w.size(); i += 7) w[i] ^= std::uint8_t(rng() & 0x11);
  }
  const auto x = randn(std::size_t(n * cols), 3);
  std::vector<float> y(std::size_t(n * rows));
  WeightView view{type, w.data(), rows, cols};
  ThreadPool& pool = pool_of(threads);
  // Kernel set: 0 = what matmul() dispatches to, 1 = portable, 2 = AVX2 without VNNI,
  // 3 = the weights packed (--repack) through the dispatched set's packed kernels.
  PackedBuffer packed;
  if (state.range(5) == 3) {
    if (!repack_supported(type)) {
      state.SkipWithError("no native packed kernels on this CPU (AVX-512 VNNI)");
      return;
    }
    packed = pack_weights(view);
    view.packed = packed.get();
  }
  const detail::MatmulKernels* k = &detail::portable_kernels();
  std::string name = "portable";
  if (state.range(5) == 0 && std::string(kernel_isa()) == "avx2") {
    // As matmul() dispatches (PRIMA_KERNELS=avxvnni / avx2 step down).
    const char* env = std::getenv("PRIMA_KERNELS");
    const bool avx512 = env == nullptr && detail::cpu_has_avx512_kernels();
    const bool vnni = avx512 || (__builtin_cpu_supports("avxvnni") &&
                                 (env == nullptr || std::string(env) == "avxvnni"));
    k = avx512 ? detail::avx512_kernels()
        : vnni ? detail::avxvnni_kernels()
               : detail::avx2_kernels();
    name = avx512 ? "avx512" : vnni ? "avx2+vnni" : "avx2";
  } else if (state.range(5) == 2) {
    k = detail::avx2_kernels();
    name = "avx2";
  } else if (state.range(5) == 3) {
    k = &detail::active_kernels();
    name = "packed";
  }
  for (auto _ : state) {
    detail::matmul_with(*k, view, x.data(), n, y.data(), pool);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(type_traits(type)->name) + " " + name);
  if (n == 1) {
    state.counters["GB/s"] =
        benchmark::Counter(double(w.size()) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
  } else {
    state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(rows * cols * n) * 1e-9,
                                                   benchmark::Counter::kIsIterationInvariantRate);
  }
}

// The same product with the weights out of every cache, as in a decode step, where each
// layer's matrices are read once per token and the model (~100 MB) exceeds the caches: each
// iteration multiplies the next of as many copies of the matrix as fill 256 MiB.
// args: ggml type, rows, cols, n, threads (the dispatched kernels).
// args: ggml type, rows, cols, n, threads, layout (0 = GGUF, 3 = packed): the weights of
// each iteration are another copy (~256 MiB in all), so they come from memory, as a decode
// step's do.
void BM_KernelMatmulStreamed(benchmark::State& state) {
  const auto type = static_cast<DType>(state.range(0));
  const std::int64_t rows = state.range(1), cols = state.range(2), n = state.range(3);
  const bool pack = state.range(5) == 3;
  if (pack && !repack_supported(type)) {
    state.SkipWithError("no native packed kernels on this CPU (AVX-512 VNNI)");
    return;
  }
  const std::size_t bytes = row_bytes(type, cols) * std::size_t(rows);
  const std::size_t copies = std::max<std::size_t>(2, (std::size_t(256) << 20) / bytes);
  std::vector<std::uint8_t> w(bytes * copies);
  {
    const auto f = randn(std::size_t(cols), 1);
    for (std::int64_t r = 0; r < rows; ++r)
      quantize_row(type, f.data(), w.data() + std::size_t(r) * row_bytes(type, cols), cols);
    for (std::size_t c = 1; c < copies; ++c)
      std::copy(w.begin(), w.begin() + std::ptrdiff_t(bytes),
                w.begin() + std::ptrdiff_t(c * bytes));
  }
  std::vector<PackedBuffer> packed;
  if (pack) {
    for (std::size_t c = 0; c < copies; ++c)
      packed.push_back(pack_weights(WeightView{type, w.data() + c * bytes, rows, cols}));
    w = std::vector<std::uint8_t>(bytes);  // the GGUF copies are not read
  }
  const auto x = randn(std::size_t(n * cols), 3);
  std::vector<float> y(std::size_t(n * rows));
  ThreadPool& pool = pool_of(static_cast<int>(state.range(4)));
  std::size_t c = 0;
  for (auto _ : state) {
    WeightView view{type, w.data() + (pack ? 0 : c * bytes), rows, cols};
    if (pack) view.packed = packed[c].get();
    matmul(view, x.data(), n, y.data(), pool);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
    c = (c + 1) % copies;
  }
  state.SetLabel(std::string(type_traits(type)->name) + (pack ? " packed" : " ") + kernel_isa());
  state.counters["GB/s"] =
      benchmark::Counter(double(bytes) * 1e-9, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_KernelMatmulStreamed)
    ->Args({int(DType::kQ4_1), 1536, 576, 1, 1, 0})
    ->Args({int(DType::kQ4_1), 576, 1536, 1, 1, 0})
    ->Args({int(DType::kQ4_1), 576, 576, 1, 1, 0})
    ->Args({int(DType::kQ4_1), 1536, 576, 8, 1, 0})
    ->Args({int(DType::kQ4_1), 576, 1536, 8, 1, 0})
    ->Args({int(DType::kQ4_1), 1536, 576, 1, 1, 3})
    ->Args({int(DType::kQ4_1), 576, 1536, 1, 1, 3})
    ->Args({int(DType::kQ4_1), 1536, 576, 8, 1, 3})
    ->Args({int(DType::kQ4_1), 576, 1536, 8, 1, 3})
    ->Args({int(DType::kQ4_1), 576, 576, 8, 1, 3})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

void MatmulArgs(benchmark::internal::Benchmark* b) {
  const std::int64_t shapes[][2] = {{576, 576}, {192, 576}, {1536, 576}, {576, 1536}};
  for (int type : {int(DType::kQ4_1), int(DType::kQ8_0)})
    for (const auto& s : shapes)
      for (int n : {1, 8, 64})
        for (int t : {1, 2}) b->Args({type, s[0], s[1], n, t, 0});
  for (int n : {1, 8, 64})  // the LM head (tied Q8_0 token embeddings)
    for (int t : {1, 2}) b->Args({int(DType::kQ8_0), 49152, 576, n, t, 0});
  // Packed weights (--repack): the layers' shapes and the LM head.
  for (const auto& s : {shapes[0], shapes[2], shapes[3]})
    for (int n : {1, 8, 64}) b->Args({int(DType::kQ4_1), s[0], s[1], n, 1, 3});
  for (int n : {1, 8}) b->Args({int(DType::kQ8_0), 49152, 576, n, 1, 3});
  // The portable kernels and AVX2 without VNNI for comparison.
  for (int set : {1, 2})
    for (int n : {1, 64}) {
      b->Args({int(DType::kQ4_1), 1536, 576, n, 1, set});
      b->Args({int(DType::kQ8_0), 49152, 576, n, 1, set});
    }
}
BENCHMARK(BM_KernelMatmul)->Apply(MatmulArgs)->UseRealTime()->Unit(benchmark::kMicrosecond);

// One parallel_for with one trivial item per thread: the cost of waking the workers and
// waiting for them, paid ~200 times per decoded token.
void BM_KernelThreadPoolDispatch(benchmark::State& state) {
  ThreadPool& pool = pool_of(static_cast<int>(state.range(0)));
  std::vector<std::int64_t> sink(64);
  for (auto _ : state) {
    pool.parallel_for(pool.size(), [&](std::int64_t b, std::int64_t e, int t) {
      sink[std::size_t(t) * 8] += e - b;
    });
  }
  benchmark::DoNotOptimize(sink.data());
}
BENCHMARK(BM_KernelThreadPoolDispatch)->Arg(1)->Arg(2)->UseRealTime();

// Decode attention for one token at context length `ctx` (9 query heads, 3 KV heads, 64 dims).
void BM_KernelAttentionDecode(benchmark::State& state) {
  const int ctx = static_cast<int>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  KvLayer kv;
  kv.block_size = 16;
  kv.kv_heads = 3;
  kv.head_dim = 64;
  const int blocks = (ctx + 15) / 16;
  std::vector<std::uint16_t> k(std::size_t(blocks) * kv.block_stride()), v(k.size());
  kv.k = k.data();
  kv.v = v.data();
  std::vector<int> table(static_cast<std::size_t>(blocks));
  for (int i = 0; i < blocks; ++i) table[std::size_t(i)] = blocks - 1 - i;
  const auto kf = randn(std::size_t(ctx) * 192, 4), vf = randn(std::size_t(ctx) * 192, 5);
  write_kv(kv, table.data(), 0, ctx, kf.data(), vf.data());
  const auto q = randn(576, 6);
  std::vector<float> out(576);
  for (auto _ : state) {
    attention(kv, table.data(), ctx - 1, 1, q.data(), 9, 0.125f, out.data(), pool_of(threads));
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_KernelAttentionDecode)
    ->Args({128, 1})
    ->Args({1024, 1})
    ->Args({1024, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

// One decode step's attention as batch-8 decoding of SmolLM2 meets it: 8 sequences at context
// `ctx`, each layer's KV cold (30 layers' caches visited in turn, 8 x ctx blocks each, the
// sequences' blocks interleaved as the block manager hands them out). Time per layer.
void BM_KernelAttentionDecodeBatch8Cold(benchmark::State& state) {
  const int ctx = static_cast<int>(state.range(0));
  const int threads = static_cast<int>(state.range(1));
  constexpr int kLayers = 30, kSeqs = 8;
  const int per_seq = (ctx + 15) / 16;
  const int blocks = per_seq * kSeqs;
  std::vector<KvLayer> kv(kLayers);
  // One allocation for all the caches (huge pages or not made no difference here).
  const std::size_t per = std::size_t(blocks) * 16 * 192;
  std::vector<std::uint16_t> arena(per * 2 * kLayers);
  // Sequence s's i-th block: i * kSeqs + s.
  std::vector<std::vector<int>> table(kSeqs, std::vector<int>(std::size_t(per_seq)));
  for (int s = 0; s < kSeqs; ++s)
    for (int i = 0; i < per_seq; ++i) table[std::size_t(s)][std::size_t(i)] = i * kSeqs + s;
  const auto kf = randn(std::size_t(ctx) * 192, 4), vf = randn(std::size_t(ctx) * 192, 5);
  for (int l = 0; l < kLayers; ++l) {
    kv[std::size_t(l)].block_size = 16;
    kv[std::size_t(l)].kv_heads = 3;
    kv[std::size_t(l)].head_dim = 64;
    kv[std::size_t(l)].k = arena.data() + per * (2 * std::size_t(l));
    kv[std::size_t(l)].v = arena.data() + per * (2 * std::size_t(l) + 1);
    for (int s = 0; s < kSeqs; ++s)
      write_kv(kv[std::size_t(l)], table[std::size_t(s)].data(), 0, ctx, kf.data(), vf.data());
  }
  const auto q = randn(std::size_t(576) * kSeqs, 6);
  std::vector<float> out(q.size());
  std::vector<AttentionSeq> seqs(kSeqs);
  for (int s = 0; s < kSeqs; ++s)
    seqs[std::size_t(s)] = {table[std::size_t(s)].data(), ctx - 1, 1, q.data() + 576 * s,
                            out.data() + 576 * s};
  int l = 0;
  for (auto _ : state) {
    attention_batch(kv[std::size_t(l)], seqs.data(), kSeqs, 9, 0.125f, pool_of(threads));
    benchmark::DoNotOptimize(out.data());
    l = (l + 1) % kLayers;
  }
}
BENCHMARK(BM_KernelAttentionDecodeBatch8Cold)
    ->Args({160, 1})
    ->Args({160, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace prima::kernels
