// Disaggregated pools of their own shape (disaggregation.prefill / .decode): each pool's
// layout, batch limits and KV capacity in report.json, the decode pool on the next node,
// and, on the shipped scenario, prefill on small TP2 replicas with large chunks beating
// uniform TP4 pools on TTFT at the same GPUs; a pool that cannot exist is exit 2 naming it.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

using nlohmann::json;

TEST(DisaggregatedPools, EachPoolHasItsShapeAndBeatsUniformPools) {
  std::string failure;
  const std::string path = source_path("scenarios/policies/disaggregated_pools.json");
  const json mixed = simulate_report(path, &failure);
  ASSERT_FALSE(mixed.is_null()) << failure;
  const json& pools = mixed["deployment"]["pools"];
  ASSERT_EQ(pools.size(), 2u);
  EXPECT_EQ(pools[0]["role"], "prefill");
  EXPECT_EQ(pools[0]["tensor_parallel"], 2);
  EXPECT_EQ(pools[0]["replicas"], 4);
  EXPECT_EQ(pools[0]["max_num_seqs"], 8);
  EXPECT_EQ(pools[0]["max_num_batched_tokens"], 16384);
  EXPECT_EQ(pools[1]["role"], "decode");
  EXPECT_EQ(pools[1]["tensor_parallel"], 4);
  EXPECT_EQ(pools[1]["max_num_seqs"], 256);
  // TP4 holds half the weights per GPU of TP2: more KV per replica.
  EXPECT_GT(pools[1]["kv_tokens_per_replica"].get<std::int64_t>(),
            2 * pools[0]["kv_tokens_per_replica"].get<std::int64_t>());
  EXPECT_EQ(mixed["gpus"]["count"], 16);
  // The decode pool starts on the second node: GPUs 8..15 are its.
  for (const json& g : mixed["gpus"]["per_gpu"])
    EXPECT_EQ(g["node"].get<int>(), g["replica"].get<int>() < 4 ? 0 : 1) << g.dump();
  EXPECT_GT(mixed["disaggregation"]["handoffs"].get<std::int64_t>(), 0);

  const json uniform =
      simulate_report(path +
                          " --set disaggregation.prefill=null --set disaggregation.decode=null"
                          " --set deployment.replicas=4 --set disaggregation.prefill_replicas=2",
                      &failure);
  ASSERT_FALSE(uniform.is_null()) << failure;
  EXPECT_FALSE(uniform["deployment"].contains("pools"));
  EXPECT_LT(mixed["latency_s"]["ttft"]["p99"].get<double>(),
            uniform["latency_s"]["ttft"]["p99"].get<double>());
  EXPECT_GE(mixed["slo"]["attainment"].get<double>(), uniform["slo"]["attainment"].get<double>());
}

// A pool of another GPU type: the topology's second node holds H100s (node_gpus), the decode
// pool names them; each pool's memory fit is its GPU's (80 GB: less KV than 141 GB).
TEST(DisaggregatedPools, APoolRunsOnItsOwnGpuType) {
  std::string failure;
  const std::string path = source_path("scenarios/policies/disaggregated_pools.json");
  const json r =
      simulate_report(path +
                          " --set 'topology={\"base\":\"h200_node\",\"nodes\":2,\"node_gpus\":"
                          "[{\"gpu\":\"H100-SXM5-80GB\",\"nodes\":1}]}'"
                          " --set disaggregation.decode.gpu=H100-SXM5-80GB",
                      &failure);
  ASSERT_FALSE(r.is_null()) << failure;
  const json& pools = r["deployment"]["pools"];
  EXPECT_EQ(pools[0]["gpu"], "H200-SXM-141GB");
  EXPECT_EQ(pools[1]["gpu"], "H100-SXM5-80GB");
  for (const json& g : r["gpus"]["per_gpu"])
    EXPECT_EQ(g["node"].get<int>(), g["replica"].get<int>() < 4 ? 0 : 1) << g.dump();
  const json same = simulate_report(path, &failure);
  ASSERT_FALSE(same.is_null()) << failure;
  EXPECT_LT(pools[1]["kv_tokens_per_replica"].get<std::int64_t>(),
            same["deployment"]["pools"][1]["kv_tokens_per_replica"].get<std::int64_t>());
}

TEST(DisaggregatedPools, APoolThatCannotExistNamesItself) {
  const std::string path = source_path("scenarios/policies/disaggregated_pools.json");
  auto r = run_prima("simulate " + path +
                     " --set disaggregation.prefill.tensor_parallel=3 --no-files -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/disaggregation/prefill: Llama-3-70B: 64 attention heads are not "
                       "divisible by tensor_parallel 3"),
            std::string::npos)
      << r.err;
  r = run_prima("simulate " + path + " --set disaggregation.decode.tensor_parallel=8 --set " +
                "disaggregation.decode_replicas=3 --set deployment.replicas=7 --no-files -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/disaggregation/decode: "), std::string::npos) << r.err;
  r = run_prima("simulate " + path +
                " --set disaggregation.decode.gpu=H100-SXM5-80GB --no-files -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/disaggregation/decode/gpu: topology h200_node has no H100-SXM5-80GB "
                       "nodes"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace prima::testing
