// Each cost term added for fidelity, against a hand computation: GEMM share by rows, prefill
// attention share and score traffic, per-sequence and launch-bound layer costs, host sampling,
// the all-reduce algorithms (ring, LL, NVLS, one-shot), FP8 and GELU FFNs.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/perf/cost_model.h"
#include "engine/plan/parallel_plan.h"

namespace prima::perf {
namespace {

using model::Quantization;

plan::GpuSpec gpu(const std::string& n) {
  return *plan::gpu_by_name(n);
}
model::ModelSpec model(const std::string& n) {
  return *model::model_by_name(n);
}
plan::ParallelPlan tp(int t) {
  plan::ParallelPlan p;
  p.tensor_parallel = t;
  return p;
}

TEST(CostTerms, AllreducePicksTheFastestEnabledAlgorithm) {
  Efficiency e;
  e.allreduce_bandwidth = 0.8;
  e.allreduce_latency_s = 5e-6;
  e.allreduce_base_s = 50e-6;
  const CostModel base(model("llama-2-7b"), Quantization::kFP16, gpu("H100-SXM5-80GB"), tp(8), e);
  const double bw = 450e9, lat = 2e-6, B = 1 << 20;
  // Ring Simple: base + 2(p-1)(lat + hop) + 2(p-1)/p B / (bw eta).
  const double ring = 50e-6 + 14 * 7e-6 + 1.75 * B / (bw * 0.8);
  EXPECT_NEAR(base.allreduce_time_s(B, 8, bw, lat), ring, 1e-12);
  EXPECT_EQ(base.best_allreduce(B, 8, bw, lat).algo, AllreduceAlgo::kRing);
  // Ring LL: no base, its own hop and share; wins for 1 MiB.
  e.allreduce_ll_bandwidth = 0.3;
  e.allreduce_ll_latency_s = 0.5e-6;
  const double ll = 14 * 2.5e-6 + 1.75 * B / (bw * 0.3);
  const CostModel with_ll(model("llama-2-7b"), Quantization::kFP16, gpu("H100-SXM5-80GB"), tp(8),
                          e);
  EXPECT_NEAR(with_ll.allreduce_time_s(B, 8, bw, lat), std::min(ring, ll), 1e-12);
  EXPECT_EQ(with_ll.best_allreduce(B, 8, bw, lat).algo, AllreduceAlgo::kRingLL);
  // At 1 GiB the ring's bandwidth wins again.
  EXPECT_EQ(with_ll.best_allreduce(1 << 30, 8, bw, lat).algo, AllreduceAlgo::kRing);
  // NVLS: latency + lat + B / (bw eta); each GPU moves B once, not 2(p-1)/p B.
  e.nvls_bandwidth = 0.6;
  e.nvls_latency_s = 40e-6;
  const CostModel with_nvls(model("llama-2-7b"), Quantization::kFP16, gpu("H100-SXM5-80GB"), tp(8),
                            e);
  const double G = 1 << 30;
  EXPECT_NEAR(with_nvls.allreduce_time_s(G, 8, bw, lat), 40e-6 + 2e-6 + G / (bw * 0.6), 1e-12);
  EXPECT_EQ(with_nvls.best_allreduce(G, 8, bw, lat).algo, AllreduceAlgo::kNvls);
  // One-shot: up to its size limit, latency + lat + (p-1) B / (bw eta).
  e.oneshot_latency_s = 3e-6;
  e.oneshot_max_bytes = 512 * 1024;
  const CostModel with_one(model("llama-2-7b"), Quantization::kFP16, gpu("H100-SXM5-80GB"), tp(8),
                           e);
  const double small = 16 * 1024;
  EXPECT_NEAR(with_one.allreduce_time_s(small, 8, bw, lat), 3e-6 + 2e-6 + 7 * small / (bw * 0.8),
              1e-12);
  EXPECT_EQ(with_one.best_allreduce(small, 8, bw, lat).algo, AllreduceAlgo::kOneShot);
  EXPECT_NE(with_one.best_allreduce(B, 8, bw, lat).algo, AllreduceAlgo::kOneShot);  // > limit
  EXPECT_EQ(with_one.allreduce_time_s(B, 1, bw, lat), 0);
}

TEST(CostTerms, GemmShareGrowsWithRows) {
  Efficiency e;
  e.gemm_compute = 0.8;
  e.gemm_m_half = 64;
  const plan::GpuSpec a100 = gpu("A100-SXM4-80GB");
  const CostModel cm(model("llama-2-7b"), Quantization::kFP16, a100, tp(1), e);
  // 8192^3: compute-bound at 0.8 x 8192 / (8192 + 64) of 312 TFLOP/s.
  const double n = 8192, flops = 2 * n * n * n;
  EXPECT_NEAR(cm.gemm_time_s(n, n, n), flops / (312e12 * 0.8 * n / (n + 64)), 1e-12);
  // 1 row: weight streaming, n k x 2 bytes (+ the row) at gemm_memory x 2039 GB/s.
  const double bytes = n * n * 2 + (n * 2 + n * 2);
  EXPECT_NEAR(cm.gemm_time_s(1, n, n), bytes / (2039e9 * e.gemm_memory), 1e-12);
}

TEST(CostTerms, WaveQuantizationIdlesTheLastWave) {
  Efficiency e;
  e.gemm_tile = 128;
  const plan::GpuSpec a100 = gpu("A100-SXM4-80GB");
  ASSERT_EQ(a100.sms, 108);
  const CostModel cm(model("llama-2-7b"), Quantization::kFP16, a100, tp(1), e);
  // 2048 x 1280 output: 16 x 10 = 160 tiles on 108 SMs = 2 waves, 160 / 216 of them busy.
  const double flops = 2.0 * 2048 * 1280 * 8192;
  EXPECT_NEAR(cm.gemm_time_s(2048, 1280, 8192), flops / (312e12 * 0.75 * 160.0 / 216.0), 1e-12);
  // 2048 x 1728 = 16 x 14 = 224 tiles... 3 waves of 108: 224 / 324.
  EXPECT_NEAR(cm.gemm_time_s(2048, 1728, 8192),
              2.0 * 2048 * 1728 * 8192 / (312e12 * 0.75 * 224.0 / 324.0), 1e-12);
  // Off without a tile or without the GPU's SM count.
  Efficiency off;
  const CostModel flat(model("llama-2-7b"), Quantization::kFP16, a100, tp(1), off);
  EXPECT_NEAR(flat.gemm_time_s(2048, 1280, 8192), flops / (312e12 * 0.75), 1e-12);
  plan::GpuSpec unknown = a100;
  unknown.sms = 0;
  const CostModel no_sms(model("llama-2-7b"), Quantization::kFP16, unknown, tp(1), e);
  EXPECT_NEAR(no_sms.gemm_time_s(2048, 1280, 8192), flops / (312e12 * 0.75), 1e-12);
}

TEST(CostTerms, FP8UsesTheFp8PeakAndOneByteWeights) {
  Efficiency e;
  const CostModel fp8(model("llama-2-7b"), Quantization::kFP8, gpu("H100-SXM5-80GB"), tp(1), e);
  EXPECT_DOUBLE_EQ(fp8.gemm_peak_flops(), 1979e12);
  EXPECT_DOUBLE_EQ(model::weight_bytes_per_param(Quantization::kFP8), 1);
  EXPECT_DOUBLE_EQ(model::gemm_activation_bytes(Quantization::kFP8), 1);
  const CostModel fp16(model("llama-2-7b"), Quantization::kFP16, gpu("H100-SXM5-80GB"), tp(1), e);
  const double n = 8192;
  EXPECT_NEAR(fp16.gemm_time_s(n, n, n) / fp8.gemm_time_s(n, n, n), 1979.0 / 989.0, 1e-9);
  // A100 has no FP8 tensor cores: the plan is refused, naming the GPU.
  plan::Topology t;
  t.gpu = gpu("A100-SXM4-80GB");
  t.nodes = 1;
  t.node.gpus = 8;
  t.node.nvlink = {300e9, 2e-6};
  t.node.pcie = {32e9, 1e-6};
  t.node.nic = {25e9, 2e-6};
  t.fabric.link = {25e9, 1e-6};
  auto fit = plan::check_plan(model("llama-2-7b"), Quantization::kFP8, t, tp(1), {}, 4096, 4096);
  ASSERT_FALSE(fit.ok());
  EXPECT_NE(fit.status().message().find("A100-SXM4-80GB"), std::string::npos);
}

TEST(CostTerms, GeluFfnHasTwoMatrices) {
  const model::ModelSpec bloom = model("bloom-176b");
  EXPECT_EQ(bloom.ffn_matrices, 2);
  EXPECT_DOUBLE_EQ(bloom.ffn_params_per_layer(0), 2.0 * 14336 * 4 * 14336);
  EXPECT_NEAR(bloom.total_params() / 1e9, 176, 1.5);  // the published 176B (biases aside)
}

BatchShape prefill(int n) {
  BatchShape b;
  b.add(n, n, true, true);
  return b;
}

TEST(CostTerms, PrefillAttentionShareAndScoreTraffic) {
  // One layer's attention only: compare two models that differ in the attention terms.
  Efficiency e;
  e.attention_compute = 0.5;
  const model::ModelSpec m = model("llama-2-7b");
  const plan::GpuSpec g = gpu("A100-SXM4-80GB");
  auto attention = [&](const Efficiency& x, int n) {
    const CostModel a(m, Quantization::kFP16, g, tp(1), x);
    return a.step(prefill(n)).stages[0].compute_s;
  };
  // With attention_seq_half = h, the compute share at mean keys k = P / T is k / (k + h):
  // the attention core's time grows by (k + h) / k, everything else stays.
  Efficiency half = e;
  half.attention_seq_half = 1024;
  const int n = 4096;
  const double P = double(n) * n - double(n) * (n - 1) / 2, k = P / n;
  const double core = 2 * P * 32 * (128 + 128) / (312e12 * 0.5);  // per layer, compute-bound
  const double grow = 32 * core * ((k + 1024) / k - 1);
  EXPECT_NEAR(attention(half, n) - attention(e, n), grow, grow * 1e-6);
  // Score traffic: P x heads x bytes per layer, at attention_memory, when memory-bound.
  Efficiency scores = e;
  scores.attention_score_bytes = 16;
  const double t_mem = P * 32 * 16 / (2039e9 * e.attention_memory);  // > core: memory-bound
  ASSERT_GT(t_mem, core);
  // KV read (the prompt's own n keys) and written, q and o: fp16.
  const double kv = 2.0 * 32 * 128;
  const double kv_and_io =
      (n * kv * 2 + n * kv * 2 + n * 32 * 128 * 2 * 2.0) / (2039e9 * e.attention_memory);
  const double added = 32 * (std::max(core, t_mem + kv_and_io) - std::max(core, kv_and_io));
  EXPECT_NEAR(attention(scores, n) - attention(e, n), added, added * 1e-6);
}

TEST(CostTerms, UnshardedScoreTrafficCoversEachChunkAtEveryTp) {
  // attention_unsharded_bytes: n(n+1)/2 pairs within each sequence's chunk x every model head
  // x bytes, per layer on every rank, whatever the TP degree. Compared at 4 and 8 bytes, both
  // memory-bound: the difference is 4 bytes' worth.
  const model::ModelSpec m = model("llama-2-70b");
  const plan::GpuSpec g = gpu("A100-SXM4-80GB");
  Efficiency u4, u8;
  u4.attention_unsharded_bytes = 4;
  u8.attention_unsharded_bytes = 8;
  auto added = [&](int t, const BatchShape& b) {
    auto at = [&](const Efficiency& e) {
      return CostModel(m, Quantization::kFP16, g, tp(t), e).step(b).stages[0].compute_s;
    };
    return at(u8) - at(u4);
  };
  auto want = [&](double pairs) { return 80 * pairs * 64 * 4 / (2039e9 * u4.attention_memory); };
  const double T = 4096;
  for (int t : {2, 4, 8})
    EXPECT_NEAR(added(t, prefill(4096)), want(T * (T + 1) / 2), want(T * (T + 1) / 2) * 1e-6)
        << "TP" << t;
  // Four prompts of 1024 tokens: four chunks' pairs, not those of one 4096-token sequence.
  BatchShape four;
  for (int i = 0; i < 4; ++i) four.add(1024, 1024, true, true);
  EXPECT_NEAR(added(8, four), want(4 * 1024.0 * 1025 / 2), want(4 * 1024.0 * 1025 / 2) * 1e-6);
}

TEST(CostTerms, AlibiBiasTrafficOnlyForAlibiModels) {
  // alibi_bias_bytes: attended pairs x heads per rank x bytes, for ALiBi models only (compared
  // at 8 and 16 bytes, both memory-bound).
  Efficiency a8, a16;
  a8.alibi_bias_bytes = 8;
  a16.alibi_bias_bytes = 16;
  const plan::GpuSpec g = gpu("A100-SXM4-80GB");
  auto added = [&](const model::ModelSpec& m) {
    const BatchShape b = prefill(2048);
    return CostModel(m, Quantization::kFP16, g, tp(8), a16).step(b).stages[0].compute_s -
           CostModel(m, Quantization::kFP16, g, tp(8), a8).step(b).stages[0].compute_s;
  };
  const model::ModelSpec bloom = model("bloom-176b");
  ASSERT_TRUE(bloom.alibi);
  EXPECT_DOUBLE_EQ(added(model("llama-2-70b")), 0.0);
  const double P = 2048.0 * 2049 / 2;  // causal pairs of one 2048-token prompt
  const double want = 70 * P * (112 / 8) * 8 / (2039e9 * a8.attention_memory);
  EXPECT_NEAR(added(bloom), want, want * 1e-6);
}

TEST(CostTerms, HostCostsPerStepPerSequenceAndPerLogit) {
  Efficiency e;
  e.step_overhead_s = 2e-3;
  e.seq_overhead_s = 100e-6;
  e.sampling_logit_s = 1e-9;
  const CostModel cm(model("llama-2-7b"), Quantization::kFP16, gpu("A100-SXM4-80GB"), tp(1), e);
  BatchShape b;
  for (int i = 0; i < 16; ++i) b.add(1, 512, false, true);
  EXPECT_NEAR(cm.step(b).overhead_s, 2e-3 + 16 * 100e-6 + 16 * 32000 * 1e-9, 1e-12);
}

TEST(CostTerms, LaunchBoundLayersHideTheirAllreduces) {
  Efficiency e;
  e.layer_launch_s = 800e-6;  // far above a layer's GPU time and its all-reduces
  const model::ModelSpec m = model("llama-2-70b");
  const plan::GpuSpec g = gpu("A100-SXM4-80GB");
  BatchShape b;
  b.add(1, 576, false, true);
  CostModel no_link(m, Quantization::kFP16, g, tp(8), e);
  // Without the TP link the floor covers compute only: 80 layers x 800 us.
  const StepCost c0 = no_link.step(b);
  const plan::LinkSpec nvlink{300e9, 2e-6};
  CostModel with_link(m, Quantization::kFP16, g, tp(8), e);
  with_link.set_tp_link(nvlink);
  const double ar = with_link.allreduce_time_s(8192 * 2, 8, 300e9, 2e-6);
  const StepCost c1 = with_link.step(b);
  // A launch-bound layer's compute is the floor minus its two all-reduces, so compute plus
  // the step's all-reduces equals the floor times the layers (plus the non-layer terms).
  const double non_layer = c0.stages[0].compute_s - 80 * 800e-6;
  EXPECT_GT(non_layer, 0);
  EXPECT_NEAR(c1.stages[0].compute_s, non_layer + 80 * (800e-6 - 2 * ar), 1e-9);
  EXPECT_NEAR(with_link.step_time_s(b, nvlink, nvlink) - c1.overhead_s, non_layer + 80 * 800e-6,
              1e-9);
}

}  // namespace
}  // namespace prima::perf
