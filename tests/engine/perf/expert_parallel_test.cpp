// Expert parallelism and attention data parallelism in the cost model and the memory fit:
// all-to-all volumes and times, expert GEMM rows, weights and KV per GPU, against hand counts.
#include <gtest/gtest.h>

#include "engine/model/model_spec.h"
#include "engine/perf/cost_model.h"
#include "engine/plan/parallel_plan.h"
#include "tests/engine/perf/h200_fixtures.h"

namespace prima::perf {
namespace {

using namespace prima::perf::fixtures;  // NOLINT: the fixtures

plan::ParallelPlan ep_plan(int tp, int dp) {
  plan::ParallelPlan p;
  p.tensor_parallel = tp;
  p.data_parallel = dp;
  p.expert_parallel = tp * dp;
  return p;
}

// DeepSeek-V3, DP8 x EP8 (tp 1), 64 decoding sequences in bf16: each GPU's group holds 8
// sequences, dispatches 8 tokens x top-8 copies of 7168 elements (2 bytes) and combines them
// (2 bytes); 7/8 of the copies leave the GPU. 58 MoE layers (3 of 61 are dense).
TEST(ExpertParallel, AllToAllVolumesByHand) {
  const model::ModelSpec m = get("deepseek-v3");
  CostModel cm(m, model::Quantization::kBF16, h200(), ep_plan(1, 8), Efficiency{});
  const StepCost c = cm.step(decode(64, 1024));
  ASSERT_EQ(c.stages.size(), 1u);
  EXPECT_EQ(c.tensor_parallel, 8);
  const double per_layer = 8.0 * 8 * 7168 * (2 + 2) * 7.0 / 8;  // 1,605,632 bytes
  EXPECT_EQ(c.stages[0].alltoalls, 2 * 58);
  EXPECT_DOUBLE_EQ(c.stages[0].alltoall_bytes, 58 * per_layer);
  EXPECT_EQ(c.stages[0].allreduces, 0);  // tp 1: no TP all-reduce

  // Skew 2: the busiest GPU receives 2 x 64 x 8 / 8 = 128 routed rows: what it receives
  // (128 x 7168 x 4 x 7/8) exceeds what it sends.
  CostModel skewed(m, model::Quantization::kBF16, h200(), ep_plan(1, 8), Efficiency{});
  skewed.set_expert_load_skew(2);
  const StepCost s = skewed.step(decode(64, 1024));
  EXPECT_DOUBLE_EQ(s.stages[0].alltoall_bytes, 58 * 128.0 * 7168 * 4 * 7.0 / 8);
  EXPECT_GT(s.stages[0].compute_s, c.stages[0].compute_s);

  // FP8 dispatches 1-byte activations; the combine stays 16-bit.
  CostModel fp8(m, model::Quantization::kFP8, h200(), ep_plan(1, 8), Efficiency{});
  EXPECT_DOUBLE_EQ(fp8.step(decode(64, 1024)).stages[0].alltoall_bytes,
                   58 * 8.0 * 8 * 7168 * (1 + 2) * 7.0 / 8);
}

// The routed experts' FLOPs on one GPU: 2 x rows x 3 x hidden x expert_ffn, rows = 64 x 8 / 8;
// the attention runs over the group's 8 sequences, not 64 (DP8 against TP8).
TEST(ExpertParallel, ExpertRowsAndAttentionShareByHand) {
  const model::ModelSpec m = get("qwen3-235b-a22b");
  Efficiency e;
  e.layer_overhead_s = 0;
  CostModel ep(m, model::Quantization::kBF16, h200(), ep_plan(1, 8), e);
  const BatchShape b = decode(64, 2048);
  const StepCost c = ep.step(b);
  // FLOPs of one GPU: per layer attention (QKV + out over 8 tokens, attention over 8 x 2048
  // pairs at 64 heads), routed experts over 64 rows, router over 8 tokens; then the LM head
  // over 8 sampled rows.
  const double h = 4096, T = 8;
  const double attn = 2 * T * m.qkv_params_per_layer() +
                      2 * T * m.attention_out_params_per_layer() +
                      2 * (8.0 * 2048) * 64 * (128 + 0 + 128);
  const double routed = 2 * 64.0 * m.expert_params();
  const double router = 2 * T * h * 128;
  const double head = 2 * T * h * m.vocab;
  EXPECT_NEAR(c.stages[0].flops, 94 * (attn + routed + router) + head, 1e-6 * c.stages[0].flops);

  // The replica's FLOPs: 8 GPUs of that each (the fullest group is every group here).
  EXPECT_NEAR(c.total_flops(), 8 * c.stages[0].flops, 1);
  // Seven sequences over eight groups: the fullest holds one.
  const StepCost seven = ep.step(decode(7, 2048));
  EXPECT_LT(seven.stages[0].flops, c.stages[0].flops);
}

TEST(ExpertParallel, AllToAllTimeByHand) {
  Efficiency e;
  e.allreduce_bandwidth = 0.8;
  e.allreduce_latency_s = 8e-6;
  e.allreduce_base_s = 5e-6;
  const plan::LinkSpec nvlink{450e9, 1e-6}, nic{50e9, 5e-6};
  CostModel cm(get("deepseek-v3"), model::Quantization::kFP8, h200(), ep_plan(1, 16), e);
  // Inside a node (p = 8): all of it on NVLink.
  EXPECT_NEAR(cm.alltoall_time_s(7e6, 8, 8, nvlink, nic), 5e-6 + 8e-6 + 1e-6 + 7e6 / (450e9 * 0.8),
              1e-15);
  // Two nodes (p = 16): 7/15 of each GPU's bytes on NVLink, 8/15 through the node's NIC,
  // which its 8 GPUs share: the NIC share is slower.
  const double bytes = 15e6, intra = bytes * 7 / 15, inter = bytes * 8 / 15;
  const double expect =
      5e-6 + 8e-6 + 5e-6 + std::max(intra / (450e9 * 0.8), 8 * inter / (50e9 * 0.8));
  EXPECT_NEAR(cm.alltoall_time_s(bytes, 16, 8, nvlink, nic), expect, 1e-15);
  EXPECT_NEAR(expect, 18e-6 + 8 * 8e6 / 40e9, 1e-15);  // 1.618 ms
  EXPECT_DOUBLE_EQ(cm.alltoall_time_s(bytes, 1, 8, nvlink, nic), 0);
}

// Weights per GPU with EP: the routed experts spread 1/8 each, the rest (attention, dense
// layers, shared experts, router, embeddings, head) whole on every GPU at tp 1. KV: each of
// the 8 groups holds its own sequences, so the replica holds 8 groups' worth.
TEST(ExpertParallel, MemoryFitByHand) {
  const model::ModelSpec m = get("deepseek-v3");
  plan::MemoryOptions mem;
  auto f =
      plan::check_plan(m, model::Quantization::kFP8, node_of(1), ep_plan(1, 8), mem, 2048, 8192);
  ASSERT_TRUE(f.ok()) << f.status().message();
  const double routed = 58.0 * 256 * m.expert_params();
  const double rest = m.total_params() - routed - m.embedding_params() - m.lm_head_params() -
                      m.hidden;  // layers without their routed experts
  const double expect = rest * 1 + routed / 8 * 1 + 2.0 * m.embedding_params() +
                        2.0 * (m.hidden + m.lm_head_params());
  EXPECT_NEAR(f->weight_bytes, expect, 1e-6 * expect);
  EXPECT_TRUE(f->fits) << f->verdict;
  const double per_token = 61 * 576 * 2.0;  // MLA latent, every layer, fp16
  EXPECT_DOUBLE_EQ(f->kv_bytes_per_token, per_token);
  EXPECT_EQ(f->kv_tokens, 8 * static_cast<std::int64_t>(std::floor(f->kv_bytes / per_token)));
  EXPECT_NE(f->verdict.find("DP8, EP8"), std::string::npos) << f->verdict;

  // Without EP (TP8) the experts split eight ways too, but the MLA latent is kept whole on
  // every rank: one replica holds one group's worth of KV.
  plan::ParallelPlan tp8;
  tp8.tensor_parallel = 8;
  auto t = plan::check_plan(m, model::Quantization::kFP8, node_of(1), tp8, mem, 2048, 8192);
  ASSERT_TRUE(t.ok());
  EXPECT_GT(f->kv_tokens, 4 * t->kv_tokens);
}

// Expert tensor parallelism: Mixtral-8x7B's 8 experts over 16 GPUs (TP1 x DP16) as 8 expert
// groups of 2 GPUs, each expert split in two. 64 decoding sequences, 4 per attention group.
// The busiest group gets 64 x top-2 / 8 = 16 rows; each of its GPUs computes half of every
// row's expert FFN, receives half the rows through the all-to-all (7/8 from other groups),
// then all-gathers the other half and reduce-scatters the outputs.
TEST(ExpertParallel, ExpertTensorParallelByHand) {
  const model::ModelSpec m = get("mixtral-8x7b");
  plan::ParallelPlan p = ep_plan(1, 16);
  p.expert_parallel = 8;
  EXPECT_EQ(p.expert_tensor_parallel(), 2);
  Efficiency e;
  e.layer_overhead_s = 0;
  CostModel cm(m, model::Quantization::kBF16, h200(), p, e);
  const StepCost c = cm.step(decode(64, 2048));
  const double h = 4096, T = 4, rows = 16, row_bytes = h * (2 + 2);
  const double in_group = rows * row_bytes / 2;
  const double sent = T * 2 * row_bytes * 7 / 8 + in_group;
  const double received = rows / 2 * row_bytes * 7 / 8 + in_group;
  EXPECT_EQ(c.stages[0].alltoalls, 2 * 32);
  EXPECT_DOUBLE_EQ(c.stages[0].alltoall_bytes, 32 * std::max(sent, received));
  // FLOPs of one GPU: attention over its 4 sequences, half of 16 rows' expert FFNs, the router
  // over 4 tokens; then the LM head over 4 sampled rows.
  const double attn = 2 * T * m.qkv_params_per_layer() +
                      2 * T * m.attention_out_params_per_layer() +
                      2 * (T * 2048) * 32 * (128 + 128);
  const double routed = 2 * rows * m.expert_params() / 2;
  const double router = 2 * T * h * 8;
  const double head = 2 * T * h * m.vocab;
  EXPECT_NEAR(c.stages[0].flops, 32 * (attn + routed + router) + head, 1e-6 * c.stages[0].flops);
  // Weights: each GPU holds half of one expert per layer (1/16 of the routed experts), the rest
  // whole; with expert TP 1 (EP16) Mixtral cannot be laid out at all.
  plan::MemoryOptions mem;
  auto f = plan::check_plan(m, model::Quantization::kBF16, node_of(2), p, mem, 2048, 8192);
  ASSERT_TRUE(f.ok()) << f.status().message();
  const double routed_params = 32.0 * 8 * m.expert_params();
  const double rest =
      m.total_params() - routed_params - m.embedding_params() - m.lm_head_params() - m.hidden;
  const double expect = 2 * (rest + routed_params / 16) + 2.0 * m.embedding_params() +
                        2.0 * (m.hidden + m.lm_head_params());
  EXPECT_NEAR(f->weight_bytes, expect, 1e-6 * expect);
  p.expert_parallel = 16;
  EXPECT_FALSE(
      plan::check_plan(m, model::Quantization::kBF16, node_of(2), p, mem, 2048, 8192).ok());
}

TEST(ExpertParallel, BadLayoutsNameTheField) {
  plan::MemoryOptions mem;
  auto check = [&](const std::string& model, int tp, int dp, int ep) {
    plan::ParallelPlan p;
    p.tensor_parallel = tp;
    p.data_parallel = dp;
    p.expert_parallel = ep;
    return plan::check_plan(get(model), model::Quantization::kBF16, node_of(2), p, mem, 2048, 1024)
        .status();
  };
  Status s = check("mixtral-8x7b", 1, 16, 16);  // 8 experts over 16 GPUs
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(
      s.message().find("/parallel_strategy/expert_parallel: 16 does not divide the 8 experts"),
      std::string::npos)
      << s.message();
  s = check("deepseek-v3", 2, 4, 3);  // EP groups must tile the stage
  EXPECT_NE(s.message().find("must be 1 or divide tensor_parallel x data_parallel = 8"),
            std::string::npos)
      << s.message();
  EXPECT_TRUE(check("deepseek-v3", 2, 4, 4).ok());  // 4 expert groups of 2 GPUs
  s = check("deepseek-v3", 1, 4, 1);                // attention DP without EP
  EXPECT_NE(s.message().find("/parallel_strategy/data_parallel"), std::string::npos) << s.message();
  s = check("llama-3-70b", 1, 1, 2);  // dense
  EXPECT_NE(s.message().find("is dense"), std::string::npos) << s.message();
  EXPECT_TRUE(check("deepseek-v3", 2, 8, 16).ok());
}

}  // namespace
}  // namespace prima::perf
