// Engine side of `prima plan`: the rate search converges to within the tolerance and is
// deterministic; the space enumerates in a fixed order with skipped combinations explained;
// shards partition it; the roofline bound is above what the simulation can reach.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "engine/capacity/plan_spec.h"
#include "engine/capacity/prune.h"
#include "engine/capacity/rate_search.h"
#include "engine/capacity/search_space.h"

namespace prima::capacity {
namespace {

using config::Json;

PlanSpec spec_of(const std::string& search) {
  Json j = Json::parse(R"({"scenario": {"model": "llama-2-7b", "topology": "dgx_a100",
      "workload": {"arrival": {"type": "poisson", "rate_rps": 1}, "prompt_tokens": 100,
                   "output_tokens": 50}},
    "slo": {"ttft_p99": "300ms"}, "search": )" +
                       search + "}");
  auto p = parse_plan(j, "p.json", ".");
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : PlanSpec{};
}

TEST(RateSearch, FindsTheThresholdWithinTolerance) {
  for (double threshold : {0.7, 3.3, 17.0, 99.0}) {
    RateSearch s(0.5, 64, 0.05);
    std::vector<double> probes;
    while (auto r = s.next()) {
      probes.push_back(*r);
      s.record(*r, *r <= threshold);
    }
    if (threshold >= 64) {
      EXPECT_EQ(s.best_rps(), 64);
      continue;
    }
    ASSERT_TRUE(s.any_met());
    EXPECT_LE(s.best_rps(), threshold);
    EXPECT_GT(s.lowest_failed_rps(), threshold);
    EXPECT_LE(s.lowest_failed_rps(), s.best_rps() * 1.05);
    EXPECT_LE(probes.size(), 14u);
  }
}

TEST(RateSearch, FailingAtMinStopsAtOnce) {
  RateSearch s(2, 10, 0.05);
  ASSERT_EQ(*s.next(), 2);
  s.record(2, false);
  EXPECT_FALSE(s.next());
  EXPECT_FALSE(s.any_met());
}

TEST(SearchSpace, EnumeratesInOrderAndExplainsSkips) {
  PlanSpec p = spec_of(R"({"topologies": ["dgx_a100"], "gpus": [4], "tensor_parallel": [1, 2, 8],
                           "replicas": "fill", "disaggregation": [false, true]})");
  auto l = enumerate_configs(p);
  ASSERT_TRUE(l.ok()) << l.status().message();
  // tp1 x4, tp2 x2 (each colocated and disaggregated); tp8 does not fit the cap of 4.
  ASSERT_EQ(l->configs.size(), 4u);
  EXPECT_EQ(l->configs[0].replicas(), 4);
  EXPECT_EQ(l->configs[2].replicas(), 2);
  EXPECT_TRUE(l->configs[3].disaggregation());
  EXPECT_EQ(l->configs[3].prefill_replicas() + l->configs[3].decode_replicas(), 2);
  ASSERT_EQ(l->skipped.size(), 2u);
  EXPECT_NE(l->skipped[0].reason.find("needs 8 GPUs"), std::string::npos) << l->skipped[0].reason;
  std::set<std::string> keys;
  for (const auto& c : l->configs) keys.insert(c.key());
  EXPECT_EQ(keys.size(), l->configs.size());
}

// Pools that pick their GPU type: two types run on the search topology rebuilt as whole
// nodes of each (the prefill pool's first), within its node count; one type rewrites the GPU.
// The same pools reached through two gpu_types are one configuration.
TEST(SearchSpace, PoolsOfTwoGpuTypesRebuildTheTopologyFromWholeNodes) {
  PlanSpec p = spec_of(R"({"topologies": [{"base": "dgx_a100", "nodes": 2}],
      "gpu_types": ["A100-SXM4-80GB", "H100-SXM5-80GB"], "gpus": [16], "tensor_parallel": [2],
      "replicas": "fill", "disaggregation": [true], "prefill_tensor_parallel": [1],
      "decode_tensor_parallel": [2], "prefill_share": [0.25],
      "prefill_gpu": ["H100-SXM5-80GB"], "decode_gpu": ["H200-SXM-141GB", "H100-SXM5-80GB"]})");
  auto l = enumerate_configs(p);
  ASSERT_TRUE(l.ok()) << l.status().message();
  ASSERT_EQ(l->configs.size(), 2u);  // one per decode type, whichever gpu_types reached it
  ASSERT_TRUE(l->skipped.empty());
  // 16 GPUs, a quarter prefill: 4 TP1 H100 replicas on one node; decode has the node left,
  // 8 H200 as 4 TP2 replicas.
  const PlanConfig& mixed = l->configs[0];
  EXPECT_EQ(mixed.key(),
            "dgx_a100{nodes=2} H100-SXM5-80GB tp2 pp1 x8 disagg p4xtp1@H100-SXM5-80GB "
            "d4xtp2@H200-SXM-141GB");
  EXPECT_EQ(mixed.gpus(), 12);
  using Counts = std::vector<std::pair<std::string, int>>;
  EXPECT_EQ(mixed.gpu_counts(), (Counts{{"H100-SXM5-80GB", 4}, {"H200-SXM-141GB", 8}}));
  EXPECT_EQ(mixed.topology, Json::parse(R"({"base": "dgx_a100", "nodes": 2,
      "gpu": "H100-SXM5-80GB", "node_gpus": [{"gpu": "H200-SXM-141GB", "nodes": 1}]})"));
  // Both pools on H100: the topology's GPU is rewritten; each pool still holds whole nodes.
  const PlanConfig& same = l->configs[1];
  EXPECT_EQ(same.gpu, "H100-SXM5-80GB");
  EXPECT_EQ(same.gpu_counts(), (Counts{{"H100-SXM5-80GB", 12}}));
  EXPECT_EQ(same.decode_replicas(), 4);
  EXPECT_FALSE(same.topology.contains("node_gpus"));
  // Each is a scenario the simulator accepts, pools on their own types.
  for (const auto& c : l->configs) {
    Screening s = screen_config(p, c);
    EXPECT_FALSE(s.pruned) << c.key() << ": " << s.reason;
  }
  // Explicit replicas that need more whole nodes than the topology has are skipped, saying so.
  auto two_types = [](const std::string& shape) {
    auto l = enumerate_configs(spec_of(R"({"topologies": [{"base": "dgx_a100", "nodes": 2}],
        "disaggregation": [true], "prefill_gpu": ["H100-SXM5-80GB"],
        "decode_gpu": ["H200-SXM-141GB"], )" +
                                       shape + "}"));
    EXPECT_TRUE(l.ok()) << l.status().message();
    return l.ok() ? *l : SearchList{};
  };
  // 1 x TP4 H100 (one node) + 1 x TP8 H200 (one node).
  EXPECT_EQ(two_types(R"("tensor_parallel": [8], "replicas": [2], "prefill_tensor_parallel": [4])")
                .configs.size(),
            1u);
  // 3 x TP4 prefill need 12 GPUs (two nodes) and the TP4 decode replica a third node.
  const SearchList m =
      two_types(R"("tensor_parallel": [4], "replicas": [4], "prefill_share": [0.75])");
  ASSERT_EQ(m.skipped.size(), 1u);
  EXPECT_NE(m.skipped[0].reason.find("the pools take 2 + 1 whole nodes"), std::string::npos)
      << m.skipped[0].reason;
}

// Expert TP splits each expert over that many GPUs: EP is the stage's GPUs / expert TP; a
// degree that does not tile the stage, and attention DP without EP, are skipped with why.
TEST(SearchSpace, ExpertTensorParallelSetsTheExpertGroups) {
  PlanSpec p = spec_of(R"({"topologies": ["dgx_a100"], "tensor_parallel": [1],
      "data_parallel": [8], "expert_parallel": [false, true],
      "expert_tensor_parallel": [1, 2, 3], "replicas": [1]})");
  auto l = enumerate_configs(p);
  ASSERT_TRUE(l.ok()) << l.status().message();
  ASSERT_EQ(l->configs.size(), 2u);
  EXPECT_EQ(l->configs[0].key(), "dgx_a100 A100-SXM4-80GB tp1 pp1 dp8 ep8 x1");
  EXPECT_EQ(l->configs[1].key(), "dgx_a100 A100-SXM4-80GB tp1 pp1 dp8 ep4 etp2 x1");
  const auto sets = l->configs[1].sets();
  EXPECT_NE(std::find(sets.begin(), sets.end(), "deployment.parallel_strategy.expert_parallel=4"),
            sets.end());
  EXPECT_EQ(l->configs[1].to_json()["expert_tensor_parallel"], 2);
  ASSERT_EQ(l->skipped.size(), 2u);
  EXPECT_NE(l->skipped[0].reason.find("needs expert parallelism"), std::string::npos);
  // Context parallelism is a dimension of its own: cp divides tp, else skipped.
  auto c = enumerate_configs(spec_of(R"({"topologies": ["dgx_a100"], "tensor_parallel": [8],
      "context_parallel": [1, 8, 3], "replicas": [1]})"));
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ(c->configs.size(), 2u);
  EXPECT_EQ(c->configs[1].key(), "dgx_a100 A100-SXM4-80GB tp8 pp1 cp8 x1");
  const auto cp_sets = c->configs[1].sets();
  EXPECT_NE(
      std::find(cp_sets.begin(), cp_sets.end(), "deployment.parallel_strategy.context_parallel=8"),
      cp_sets.end());
  ASSERT_EQ(c->skipped.size(), 1u);
  EXPECT_NE(c->skipped[0].reason.find("context parallelism 3 does not divide tensor_parallel 8"),
            std::string::npos);
  EXPECT_NE(l->skipped[1].reason.find("expert tensor parallelism 3 does not divide the stage's 8"),
            std::string::npos)
      << l->skipped[1].reason;
}

TEST(SearchSpace, ShardsPartitionTheList) {
  PlanSpec p = spec_of(R"({"topologies": ["dgx_a100"], "tensor_parallel": [1, 2, 4],
                           "replicas": [1, 2], "max_num_seqs": [16, 64]})");
  auto l = enumerate_configs(p);
  ASSERT_TRUE(l.ok());
  std::multiset<std::string> all;
  for (int i = 0; i < 5; ++i)
    for (const auto& c : shard_of(l->configs, i, 5)) all.insert(c.key());
  EXPECT_EQ(all.size(), l->configs.size());
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), l->configs.size());
}

TEST(PlanSpecParse, ErrorsNameThePath) {
  auto bad = [](const std::string& text, const std::string& needle) {
    auto p = parse_plan(Json::parse(text), "p.json", ".");
    ASSERT_FALSE(p.ok()) << text;
    EXPECT_NE(p.status().message().find(needle), std::string::npos) << p.status().message();
  };
  const std::string sc = R"("scenario": {"model": "llama-2-7b"}, )";
  bad("{" + sc + R"("slo": {}, "search": {"topologies": ["dgx_a100"]}})", "no bound");
  bad("{" + sc + R"("slo": {"ttft_p99": 1}, "search": {"topologies": []}})",
      "/search/topologies: empty");
  bad("{" + sc + R"("slo": {"ttft_p99": 1}, "search": {"topologies": ["dgx_a100"]},
      "prices": {"Z80": 1}})",
      "unknown GPU type \"Z80\"");
  bad("{" + sc + R"("slo": {"ttft_p99": 1}, "search": {"topologies": ["dgx_a100"],
      "replicas": "lots"}})",
      "/search/replicas");
  bad("{" + sc + R"("slo": {"ttft_p99": 1}, "search": {"topologies": ["dgx_a100"],
      "disaggregation": [true], "decode_gpu": ["H100-SXM5-80GB", "B300"]}})",
      "/search/decode_gpu/1: unknown GPU type \"B300\"");
}

TEST(Prune, SeventyBFp16OnOneGpuIsAMemoryPrune) {
  Json j = Json::parse(R"({"scenario": {"model": "llama-2-70b", "topology": "dgx_a100",
      "workload": {"arrival": {"type": "poisson", "rate_rps": 1}, "prompt_tokens": 100,
                   "output_tokens": 50}},
    "slo": {"ttft_p99": "300ms"},
    "search": {"topologies": ["dgx_a100"], "tensor_parallel": [1, 8]}})");
  auto p = parse_plan(j, "p.json", ".");
  ASSERT_TRUE(p.ok()) << p.status().message();
  auto l = enumerate_configs(*p);
  ASSERT_TRUE(l.ok());
  Screening tp1 = screen_config(*p, l->configs[0]);
  EXPECT_TRUE(tp1.pruned);
  EXPECT_EQ(tp1.kind, "memory") << tp1.reason;
  Screening tp8 = screen_config(*p, l->configs[1]);
  EXPECT_FALSE(tp8.pruned) << tp8.reason;
  EXPECT_GT(tp8.bound_rps, 1);
}

}  // namespace
}  // namespace prima::capacity
