// Context parallelism in the cost model and the memory fit: each sequence's KV spread over cp
// of a TP group's GPUs (where those GPUs held copies of it), against hand counts: the same
// attention FLOPs, 1/cp of the KV read and written, the query and output exchange, cp x the
// KV tokens; and the layouts it cannot take name the field.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/model/model_spec.h"
#include "engine/perf/cost_model.h"
#include "engine/plan/parallel_plan.h"
#include "tests/engine/perf/h200_fixtures.h"

namespace prima::perf {
namespace {

using namespace prima::perf::fixtures;  // NOLINT: the fixtures

plan::ParallelPlan tp_cp(int tp, int cp) {
  plan::ParallelPlan p;
  p.tensor_parallel = tp;
  p.context_parallel = cp;
  return p;
}

// DeepSeek-V3 (MLA: the 576-element latent whole on every TP rank) at TP8, 4 sequences
// decoding at 4,096 tokens: CP8 keeps 1/8 of each latent per GPU. Per layer a GPU reads 7/8
// less KV and writes 7/8 less, computes the same attention FLOPs (the group's 128 heads over
// 1/8 of the context instead of its 16 heads over all of it), and exchanges with the other 7
// the 4 tokens' queries (128 + 64 wide) and partial outputs (128 + 2 for the log-sum-exp) of
// its 16 heads, 16-bit.
TEST(ContextParallel, KvReadsExchangeAndFlopsByHand) {
  const model::ModelSpec m = get("deepseek-v3");
  CostModel tp(m, model::Quantization::kFP8, h200(), tp_cp(8, 1), Efficiency{});
  CostModel cp(m, model::Quantization::kFP8, h200(), tp_cp(8, 8), Efficiency{});
  const BatchShape b = decode(4, 4096);
  const StepCost a = tp.step(b), c = cp.step(b);
  EXPECT_DOUBLE_EQ(c.stages[0].flops, a.stages[0].flops);
  const double latent = m.kv_elements_per_token_per_layer();  // 576
  EXPECT_EQ(latent, 576);
  const double kv_bytes = 61 * (b.kv_tokens_read + 4.0) * latent * 2;  // fp16 KV
  EXPECT_NEAR(a.stages[0].hbm_bytes - c.stages[0].hbm_bytes, kv_bytes * 7 / 8, 1e-6 * kv_bytes);
  EXPECT_EQ(a.stages[0].alltoalls, 0);
  EXPECT_EQ(c.stages[0].alltoalls, 2 * 61);
  EXPECT_DOUBLE_EQ(c.stages[0].alltoall_bytes, 61 * 7 * 4.0 * 16 * (128 + 64 + 128 + 2) * 2);
  // The TP all-reduces are unchanged.
  EXPECT_EQ(c.stages[0].allreduces, a.stages[0].allreduces);
}

// KV per GPU is 1/cp of the copies it held: CP8 on DeepSeek-V3 TP8 holds 8x the tokens.
TEST(ContextParallel, MemoryFitHoldsCpTimesTheTokens) {
  const model::ModelSpec m = get("deepseek-v3");
  plan::MemoryOptions mem;
  auto a = plan::check_plan(m, model::Quantization::kFP8, node_of(1), tp_cp(8, 1), mem, 2048, 1024);
  auto c = plan::check_plan(m, model::Quantization::kFP8, node_of(1), tp_cp(8, 8), mem, 2048, 1024);
  ASSERT_TRUE(a.ok() && c.ok());
  EXPECT_DOUBLE_EQ(c->kv_bytes_per_token * 8, a->kv_bytes_per_token);
  EXPECT_DOUBLE_EQ(c->weight_bytes, a->weight_bytes);
  EXPECT_NEAR(static_cast<double>(c->kv_tokens), 8.0 * a->kv_tokens, 8);
  EXPECT_NE(c->verdict.find("TP8 x PP1, CP8"), std::string::npos) << c->verdict;
  // A context one TP8 GPU cannot hold fits with CP8.
  const std::int64_t longest = a->kv_tokens + 1;
  auto a2 =
      plan::check_plan(m, model::Quantization::kFP8, node_of(1), tp_cp(8, 1), mem, 2048, longest);
  auto c2 =
      plan::check_plan(m, model::Quantization::kFP8, node_of(1), tp_cp(8, 8), mem, 2048, longest);
  ASSERT_TRUE(a2.ok() && c2.ok());
  EXPECT_FALSE(a2->fits);
  EXPECT_TRUE(c2->fits) << c2->verdict;
}

TEST(ContextParallel, LayoutsWithoutCopiesToSpreadNameTheField) {
  plan::MemoryOptions mem;
  auto check = [&](const std::string& model, int tp, int cp, int dp = 1, int ep = 1) {
    plan::ParallelPlan p = tp_cp(tp, cp);
    p.data_parallel = dp;
    p.expert_parallel = ep;
    return plan::check_plan(get(model), model::Quantization::kBF16, node_of(1), p, mem, 2048, 1024)
        .status();
  };
  // Llama-3-70B at TP8: 8 KV heads over 8 ranks, one copy each: nothing to spread.
  Status s = check("llama-3-70b", 8, 2);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("/parallel_strategy/context_parallel: 2 must divide the 1 copies"),
            std::string::npos)
      << s.message();
  // Llama-3-8B at TP4: 2 of its 8 KV heads per rank, one copy.
  EXPECT_FALSE(check("llama-3-8b", 4, 2).ok());
  // MLA at TP8: 8 copies; CP3 does not divide them, CP4 does.
  s = check("deepseek-v3", 8, 3);
  EXPECT_NE(s.message().find("must divide the 8 copies"), std::string::npos) << s.message();
  EXPECT_TRUE(check("deepseek-v3", 8, 4).ok());
  // With attention DP the groups already hold different sequences.
  s = check("deepseek-v3", 2, 2, 4, 8);
  EXPECT_NE(s.message().find("with data_parallel 4"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace prima::perf
