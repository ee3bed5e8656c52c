// The cost model against hand computations (formulas written out here) and the roofline floors
// of shared/notes/hardware-and-models.md.
#include "engine/perf/cost_model.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace prima::perf {
namespace {

using model::Quantization;

plan::GpuSpec a100() {
  return *plan::gpu_by_name("A100-SXM4-80GB");
}
model::ModelSpec model(const std::string& n) {
  return *model::model_by_name(n);
}

plan::ParallelPlan plan_of(int tp, int pp) {
  plan::ParallelPlan p;
  p.tensor_parallel = tp;
  p.pipeline_parallel = pp;
  return p;
}

BatchShape decode_batch(int seqs, int context) {
  BatchShape b;
  for (int i = 0; i < seqs; ++i) b.add({RequestId(i), 1, context, false, true});
  return b;
}

double sum_compute(const StepCost& c) {
  double t = 0;
  for (const auto& s : c.stages) t += s.compute_s;
  return t;
}

TEST(CostModel, DecodeFloorLlama2_7bOneA100) {
  CostModel cm(model("llama-2-7b"), Quantization::kFP16, a100(), plan_of(1, 1), Efficiency{});
  const double t = cm.step_time_s(decode_batch(1, 128), {}, {});
  EXPECT_GE(t, 6.6e-3);  // 13.5 GB of weights / 2.039 TB/s
  EXPECT_LT(t, 10e-3);
}

TEST(CostModel, DecodeFloorLlama2_70bTp4BeforeCommunication) {
  CostModel cm(model("llama-2-70b"), Quantization::kFP16, a100(), plan_of(4, 1), Efficiency{});
  const StepCost c = cm.step(decode_batch(1, 128));
  EXPECT_GE(sum_compute(c) + c.overhead_s, 16.9e-3);
  EXPECT_LT(sum_compute(c) + c.overhead_s, 26e-3);
}

TEST(CostModel, PrefillBoundByFlops) {
  const auto m = model("llama-2-7b");
  CostModel cm(m, Quantization::kFP16, a100(), plan_of(1, 1), Efficiency{});
  BatchShape b;
  b.add({1, 2048, 2048, true, true});
  const StepCost c = cm.step(b);
  const double dense_flops = 2 * (m.total_params() - m.embedding_params()) * 2048;
  EXPECT_GE(sum_compute(c), dense_flops / 312e12);
  // The GEMMs dominate; attention and the single sampled LM-head row add a few percent.
  EXPECT_GT(c.total_flops(), 2 * (m.total_params() - 2 * m.embedding_params()) * 2048);
  EXPECT_LT(c.total_flops(), 1.1 * dense_flops);
}

// Llama-2-7B fp16, TP1, 4 decoding sequences at context 100, written out operator by operator.
TEST(CostModel, HandComputedSmallDecodeBatch) {
  const Efficiency e;
  CostModel cm(model("llama-2-7b"), Quantization::kFP16, a100(), plan_of(1, 1), e);
  const BatchShape b = decode_batch(4, 100);
  ASSERT_EQ(b.tokens(), 4);
  ASSERT_DOUBLE_EQ(b.attended_pairs, 400);  // 4 x (1 x 100)
  ASSERT_DOUBLE_EQ(b.kv_tokens_read, 400);

  const double T = 4, h = 4096, ffn = 11008, V = 32000, peak = 312e12, bw = 2039e9;
  auto roof = [&](double flops, double eff_c, double bytes, double eff_m) {
    return std::max(flops / (peak * eff_c), bytes / (bw * eff_m));
  };
  // QKV: W [4096 x 12288] fp16; reads W and the input rows, writes QKV rows.
  const double qkv_p = h * 3 * h;
  const double t_qkv =
      roof(2 * T * qkv_p, e.gemm_compute, qkv_p * 2 + T * (h * 2 + 3 * h * 2), e.gemm_memory);
  // Attention: 2 x pairs x heads x (128 + 128) FLOPs; reads 400 cached tokens x 8192 KV
  // elements, writes 4 new ones, reads Q and writes O (4 x 32 x 128 x 2 x 2 bytes).
  const double t_attn = roof(2 * 400 * 32 * 256, e.attention_compute,
                             400 * 8192 * 2 + T * 8192 * 2 + T * 32 * 128 * 4, e.attention_memory);
  // Output projection [4096 x 4096].
  const double o_p = h * h;
  const double t_o =
      roof(2 * T * o_p, e.gemm_compute, o_p * 2 + T * (h * 2 + h * 2), e.gemm_memory);
  // SwiGLU FFN: 3 x 4096 x 11008 weights; activations in, gate/up/act out, result out.
  const double f_p = 3 * h * ffn;
  const double t_ffn =
      roof(2 * T * f_p, e.gemm_compute, f_p * 2 + T * (h * 2 + 3 * ffn * 2 + h * 2), e.gemm_memory);
  // Elementwise: 12 hidden-wide fp16 passes + the SwiGLU product (read 2, write 1).
  const double t_elem = T * 2 * (12 * h + 3 * ffn) / (bw * e.elementwise_memory);
  const double layer = t_qkv + t_attn + t_o + t_ffn + t_elem + e.layer_overhead_s;
  // Embedding gather and final norm (read + write a hidden row per token each), LM head.
  const double t_embed = T * h * 4 / (bw * e.elementwise_memory);
  const double t_head =
      roof(2 * T * h * V, e.gemm_compute, V * h * 2 + T * (h * 2 + V * 4), e.gemm_memory);
  // Sampling: softmax and draw read the fp32 logits twice.
  const double t_sample = T * V * 4 * 2 / (bw * e.elementwise_memory);
  const double expected = 32 * layer + 2 * t_embed + t_head + t_sample;

  const StepCost c = cm.step(b);
  ASSERT_EQ(c.stages.size(), 1u);
  EXPECT_NEAR(c.stages[0].compute_s, expected, expected * 1e-12);
  EXPECT_DOUBLE_EQ(c.overhead_s, e.step_overhead_s);
  EXPECT_EQ(c.stages[0].allreduces, 0);
  EXPECT_DOUBLE_EQ(c.stages[0].send_bytes, 0);
  const double flops = 32 * (2 * T * (qkv_p + o_p + f_p) + 2 * 400 * 32 * 256) + 2 * T * h * V;
  EXPECT_NEAR(c.total_flops(), flops, flops * 1e-12);
  EXPECT_NEAR(cm.step_time_s(b, {}, {}), expected + e.step_overhead_s, 1e-12);
}

TEST(CostModel, CommunicationOfTp4Pp2) {
  const Efficiency e;
  CostModel cm(model("llama-2-70b"), Quantization::kFP16, a100(), plan_of(4, 2), e);
  const BatchShape b = decode_batch(256, 1024);
  const StepCost c = cm.step(b);
  ASSERT_EQ(c.stages.size(), 2u);
  for (const auto& s : c.stages) {
    EXPECT_EQ(s.allreduces, 80);                            // 2 per layer x 40 layers
    EXPECT_DOUBLE_EQ(s.allreduce_bytes, 256 * 8192 * 2.0);  // tokens x hidden x 2 bytes
  }
  EXPECT_DOUBLE_EQ(c.stages[0].send_bytes, 256 * 8192 * 2.0);
  EXPECT_DOUBLE_EQ(c.stages[1].send_bytes, 0);
  // Ring all-reduce of 1 MB over 4 ranks on NVLink3 (300 GB/s, 2 us):
  // 2 x 3/4 x 1e6 / (300e9 x 0.8) + 2 x 3 x (2 us + 8 us).
  EXPECT_NEAR(cm.allreduce_time_s(1e6, 4, 300e9, 2e-6), 1.5e6 / (300e9 * 0.8) + 6 * (2e-6 + 8e-6),
              1e-15);
  EXPECT_DOUBLE_EQ(cm.allreduce_time_s(1e6, 1, 300e9, 2e-6), 0);
  EXPECT_NEAR(cm.send_time_s(1e6, 25e9, 1e-6), 1e6 / 25e9 + 1e-6 + 5e-6, 1e-15);
  const plan::LinkSpec nvlink{300e9, 2e-6}, ib{25e9, 1e-6};
  double expected = c.overhead_s;
  for (const auto& s : c.stages)
    expected += s.compute_s + 80 * cm.allreduce_time_s(s.allreduce_bytes, 4, 300e9, 2e-6);
  expected += cm.send_time_s(256 * 8192 * 2.0, 25e9, 1e-6);
  EXPECT_NEAR(cm.step_time_s(b, nvlink, ib), expected, 1e-12);
}

TEST(CostModel, QuantizationPeaksAndBytes) {
  const auto m = model("llama-2-7b");
  CostModel fp16(m, Quantization::kFP16, a100(), plan_of(1, 1), Efficiency{});
  CostModel w8(m, Quantization::kW8A8, a100(), plan_of(1, 1), Efficiency{});
  CostModel w4(m, Quantization::kW4A16, a100(), plan_of(1, 1), Efficiency{});
  EXPECT_DOUBLE_EQ(fp16.gemm_peak_flops(), 312e12);
  EXPECT_DOUBLE_EQ(w8.gemm_peak_flops(), 624e12);
  EXPECT_DOUBLE_EQ(w4.gemm_peak_flops(), 312e12);
  BatchShape prefill;
  prefill.add({1, 4096, 4096, true, true});
  EXPECT_LT(sum_compute(w8.step(prefill)), 0.6 * sum_compute(fp16.step(prefill)));
  const BatchShape one = decode_batch(1, 64);
  EXPECT_LT(sum_compute(w4.step(one)), 0.45 * sum_compute(fp16.step(one)));
}

TEST(CostModel, MoeReadsOnlyRoutedExperts) {
  const auto m = model("mixtral-8x7b");
  CostModel cm(m, Quantization::kFP16, a100(), plan_of(2, 1), Efficiency{});
  const double small = cm.step(decode_batch(1, 64)).stages[0].hbm_bytes;
  const double large = cm.step(decode_batch(64, 64)).stages[0].hbm_bytes;
  // Batch 1 reads 2 of 8 experts per layer, batch 64 reads all 8 (per GPU: / tp).
  const double expert_bytes = m.expert_params() * 2 / 2;
  EXPECT_NEAR(large - small, 32 * 6 * expert_bytes, 0.05 * 32 * 6 * expert_bytes);
}

TEST(CostModel, EmptyBatchCostsNothing) {
  CostModel cm(model("llama-2-7b"), Quantization::kFP16, a100(), plan_of(1, 2), Efficiency{});
  const StepCost c = cm.step(BatchShape{});
  EXPECT_EQ(c.stages.size(), 2u);
  EXPECT_DOUBLE_EQ(cm.step_time_s(BatchShape{}, {}, {}), 0);
}

}  // namespace
}  // namespace prima::perf
