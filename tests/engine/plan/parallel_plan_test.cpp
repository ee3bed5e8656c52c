// Placement, divisibility rules, memory-fit verdicts and the seed's deployment JSON.
#include "engine/plan/parallel_plan.h"

#include <gtest/gtest.h>

namespace prima::plan {
namespace {

Topology topo(const std::string& name, int nodes = 0) {
  config::Json j = {{"t", name}};
  if (nodes > 0) j = {{"t", {{"base", name}, {"nodes", nodes}}}};
  config::JsonReader r(j, "test");
  return resolve_topology(r, "t");
}

model::ModelSpec model(const std::string& n) {
  return *model::model_by_name(n);
}

ParallelPlan plan(int tp, int pp, int replicas = 1) {
  ParallelPlan p;
  p.tensor_parallel = tp;
  p.pipeline_parallel = pp;
  p.replicas = replicas;
  return p;
}

TEST(Place, ConsecutiveGpusTpInsideNode) {
  auto r = place(plan(4, 2), topo("bitbrick_k1"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 1u);
  EXPECT_EQ((*r)[0].devices, (std::vector<std::vector<DeviceId>>{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  EXPECT_EQ((*r)[0].all().size(), 8u);
  // tp = 3 on 4-GPU nodes: a group never straddles two nodes.
  auto r3 = place(plan(3, 2), topo("bitbrick_k1"));
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ((*r3)[0].devices, (std::vector<std::vector<DeviceId>>{{0, 1, 2}, {4, 5, 6}}));
}

// Stage-major: every replica's stage 0, then every replica's stage 1. TP2 x PP2 x 4 replicas
// on four 4-GPU nodes: stage 0 of replicas 0, 1 on node 0 and of 2, 3 on node 1; stage 1 on
// nodes 2 and 3 (packed: each replica on a node of its own).
TEST(Place, StageMajorSharesNodesStageByStage) {
  ParallelPlan p = plan(2, 2, 4);
  auto packed = place(p, topo("bitbrick_k1", 4));
  ASSERT_TRUE(packed.ok());
  EXPECT_EQ((*packed)[1].devices, (std::vector<std::vector<DeviceId>>{{4, 5}, {6, 7}}));
  p.placement = Placement::kStageMajor;
  auto r = place(p, topo("bitbrick_k1", 4));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[0].devices, (std::vector<std::vector<DeviceId>>{{0, 1}, {8, 9}}));
  EXPECT_EQ((*r)[1].devices, (std::vector<std::vector<DeviceId>>{{2, 3}, {10, 11}}));
  EXPECT_EQ((*r)[3].devices, (std::vector<std::vector<DeviceId>>{{6, 7}, {14, 15}}));
  EXPECT_EQ((*r)[2].replica, 2);
  // TP 3 on 4-GPU nodes: groups still never straddle a node.
  ParallelPlan p3 = plan(3, 2, 2);
  p3.placement = Placement::kStageMajor;
  auto r3 = place(p3, topo("bitbrick_k1", 4));
  ASSERT_TRUE(r3.ok());
  EXPECT_EQ((*r3)[1].devices, (std::vector<std::vector<DeviceId>>{{4, 5, 6}, {12, 13, 14}}));
}

TEST(Place, TooFewGpus) {
  auto r = place(plan(8, 1, 2), topo("bitbrick_k1"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "plan needs 8 GPUs per replica x 2 replicas = 16, topology bitbrick_k1 has 8");
  EXPECT_TRUE(place(plan(8, 1, 2), topo("bitbrick_k1", 4)).ok());
}

TEST(CheckPlan, SeventyBOnOneA100DoesNotFit) {
  MemoryOptions mem;
  auto f = check_plan(model("llama-2-70b"), model::Quantization::kFP16, topo("dgx_a100"),
                      plan(1, 1), mem, 2048, 4096);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_FALSE(f->fits);
  EXPECT_EQ(f->verdict,
            "does not fit: Llama-2-70B fp16 on 1x A100-SXM4-80GB needs 138.0 GB of weights per "
            "GPU, 72.0 GB usable");
}

TEST(CheckPlan, SeventyBTp4Pp2FitsWithHandComputedKv) {
  MemoryOptions mem;
  const auto m = model("llama-2-70b");
  auto f =
      check_plan(m, model::Quantization::kFP16, topo("bitbrick_k1"), plan(4, 2), mem, 8192, 4096);
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_TRUE(f->fits) << f->verdict;
  // Largest stage: 40 layers + embedding (first) vs 40 layers + LM head + norm (last).
  const double layer = m.layer_params(0);
  const double w = (40 * layer + 32000.0 * 8192 + 8192) * 2 / 4;
  EXPECT_DOUBLE_EQ(f->weight_bytes, w);
  // KV per GPU per token: 40 layers x (8 / 4 KV heads) x 2 x 128 x 2 bytes.
  EXPECT_DOUBLE_EQ(f->kv_bytes_per_token, 40 * 2 * 2 * 128 * 2.0);
  // Activations: 8192 tokens x 2 B x (4 x 8192 + (64 + 16) x 128 / 4 + 2 x 28672 / 4)
  // + 256 rows x 4 B x 32000 / 4.
  const double act =
      8192 * 2.0 * (4 * 8192 + 80 * 128 / 4.0 + 2 * 28672 / 4.0) + 256 * 4.0 * 32000 / 4;
  EXPECT_DOUBLE_EQ(f->activation_bytes, act);
  EXPECT_DOUBLE_EQ(f->usable_bytes, 72e9);
  EXPECT_EQ(f->kv_tokens, static_cast<std::int64_t>((72e9 - w - act) / (40 * 2 * 2 * 128 * 2.0)));
  EXPECT_NE(f->verdict.find("fits: Llama-2-70B fp16 on 8x A100-SXM4-80GB (TP4 x PP2)"),
            std::string::npos)
      << f->verdict;
}

TEST(CheckPlan, KvShortfallIsReported) {
  MemoryOptions mem;
  // 1M-token context of Llama-2-7B on one 32 GB device: 512 KiB x 1M = 550 GB of KV.
  auto f = check_plan(model("llama-2-7b"), model::Quantization::kFP16, topo("domestic_32g_cluster"),
                      plan(1, 1), mem, 2048, 1 << 20);
  ASSERT_TRUE(f.ok());
  EXPECT_FALSE(f->fits);
  EXPECT_NE(f->verdict.find("for the KV cache"), std::string::npos) << f->verdict;
  // fp8 KV halves the bytes per token.
  MemoryOptions fp8;
  fp8.kv_bytes_per_element = 1;
  auto g = check_plan(model("llama-2-7b"), model::Quantization::kFP16, topo("domestic_32g_cluster"),
                      plan(1, 1), fp8, 2048, 1);
  EXPECT_DOUBLE_EQ(g->kv_bytes_per_token, f->kv_bytes_per_token / 2);
}

TEST(CheckPlan, DivisibilityRules) {
  MemoryOptions mem;
  const auto t = topo("dgx_a100", 8);
  auto heads =
      check_plan(model("llama-2-7b"), model::Quantization::kFP16, t, plan(3, 1), mem, 1, 1);
  ASSERT_FALSE(heads.ok());
  EXPECT_NE(heads.status().message().find("32 attention heads are not divisible by "
                                          "tensor_parallel 3"),
            std::string::npos);
  auto layers =
      check_plan(model("llama-2-7b"), model::Quantization::kFP16, t, plan(1, 3), mem, 1, 1);
  ASSERT_FALSE(layers.ok());
  EXPECT_NE(layers.status().message().find("32 layers are not divisible by pipeline_parallel 3"),
            std::string::npos);
  // tp 16 > 8 KV heads: each KV head replicated on 2 ranks.
  auto rep =
      check_plan(model("llama-2-70b"), model::Quantization::kFP16, t, plan(16, 1), mem, 1, 1);
  ASSERT_TRUE(rep.ok()) << rep.status().message();
  EXPECT_DOUBLE_EQ(rep->kv_bytes_per_token, 80 * 1 * 2 * 128 * 2.0);
  // SmolLM2: 9 heads / 3 KV heads; tp 3 is fine, tp 9 replicates each KV head 3 times.
  EXPECT_TRUE(
      check_plan(model("smollm2-135m"), model::Quantization::kFP16, t, plan(3, 1), mem, 1, 1).ok());
  auto few = check_plan(model("llama-2-7b"), model::Quantization::kFP16, topo("bitbrick_k1"),
                        plan(8, 1, 2), mem, 1, 1);
  ASSERT_FALSE(few.ok());
  EXPECT_EQ(few.status().code(), StatusCode::kFailedPrecondition);
}

TEST(CheckPlan, QuantizationShrinksWeights) {
  MemoryOptions mem;
  const auto m = model("llama-2-70b");
  const auto t = topo("dgx_a100");
  auto fp16 = check_plan(m, model::Quantization::kFP16, t, plan(4, 1), mem, 1, 1);
  auto w4 = check_plan(m, model::Quantization::kW4A16, t, plan(4, 1), mem, 1, 1);
  ASSERT_TRUE(fp16.ok() && w4.ok());
  EXPECT_LT(w4->weight_bytes, fp16->weight_bytes * 0.3);
  EXPECT_GT(w4->kv_tokens, fp16->kv_tokens);
  // 70B W4A16 fits on one 80 GB A100 (about 37 GB of weights).
  auto one = check_plan(m, model::Quantization::kW4A16, t, plan(1, 1), mem, 2048, 4096);
  EXPECT_TRUE(one->fits) << one->verdict;
}

TEST(ParseDeployment, SeedJsonAsWritten) {
  config::Json j = config::Json::parse(R"({
    "parallel_strategy": {"tensor_parallel": 4, "pipeline_parallel": 2, "micro_batch": 16},
    "memory_optim": {"activation_checkpointing": true, "cpu_offload": false}
  })");
  ParallelPlan p;
  MemoryOptions mem;
  parse_deployment(config::JsonReader(j, "seed000.json"), &p, &mem);
  EXPECT_EQ(p.tensor_parallel, 4);
  EXPECT_EQ(p.pipeline_parallel, 2);
  EXPECT_EQ(p.micro_batch, 16);
  EXPECT_EQ(p.replicas, 1);
  EXPECT_TRUE(mem.activation_checkpointing);
  EXPECT_FALSE(mem.cpu_offload);
  EXPECT_DOUBLE_EQ(mem.gpu_memory_utilization, 0.9);
}

TEST(ParseDeployment, ExtrasAndErrors) {
  config::Json j = config::Json::parse(
      R"({"replicas": 3, "gpu_memory_utilization": 0.8, "kv_cache_dtype": "fp8"})");
  ParallelPlan p;
  MemoryOptions mem;
  parse_deployment(config::JsonReader(j, "d.json"), &p, &mem);
  EXPECT_EQ(p.replicas, 3);
  EXPECT_DOUBLE_EQ(mem.gpu_memory_utilization, 0.8);
  EXPECT_DOUBLE_EQ(mem.kv_bytes_per_element, 1);
  config::Json bad = config::Json::parse(R"({"parallel_strategy": {"tensor_paralel": 4}})");
  try {
    parse_deployment(config::JsonReader(bad, "d.json"), &p, &mem);
    FAIL();
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("d.json: /parallel_strategy/tensor_paralel: unknown"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(p.placement, Placement::kPacked);
  config::Json sm = config::Json::parse(R"({"placement": "stage_major"})");
  parse_deployment(config::JsonReader(sm, "d.json"), &p, &mem);
  EXPECT_EQ(p.placement, Placement::kStageMajor);
  config::Json pl = config::Json::parse(R"({"placement": "spread"})");
  try {
    parse_deployment(config::JsonReader(pl, "d.json"), &p, &mem);
    FAIL();
  } catch (const config::ConfigError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("d.json: /placement"), std::string::npos) << m;
    EXPECT_NE(m.find("stage_major"), std::string::npos) << m;
  }
  config::Json kv = config::Json::parse(R"({"kv_cache_dtype": "fp4"})");
  EXPECT_THROW(parse_deployment(config::JsonReader(kv, "d.json"), &p, &mem), config::ConfigError);
}

}  // namespace
}  // namespace prima::plan
