// The verdicts of docs/seed-claims.md, kept true: each test reruns the scenario behind one
// sentence of that page and checks its direction and size.
#include <gtest/gtest.h>

#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

using nlohmann::json;

json simulate(const std::string& scenario, const std::string& sets) {
  auto r = run_prima("simulate " + source_path("scenarios/seed_claims/" + scenario) + " " + sets +
                     " --json -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return r.exit_code == 0 ? json::parse(r.out) : json::object();
}

// Seed 000: at 6 req/s one batched node keeps TTFT p99 within 300 ms; the seed's TP4 x PP2
// (micro-batch 16) on two nodes does not, and one request at a time saturates near 0.27 req/s.
TEST(SeedClaims, Seed000SecondNodeDoesNotHelpTp4Pp2) {
  const std::string rate = "--set workload.arrival.rate_rps=6";
  json pp2 = simulate("seed000_llama2_70b_bitbrick.json", rate);
  json one = simulate("seed000_single_node_batched.json", rate);
  json naive = simulate("seed000_single_node_unbatched.json", rate);
  ASSERT_FALSE(pp2.empty() || one.empty() || naive.empty());
  EXPECT_GT(pp2["latency_s"]["ttft"]["p99"].get<double>(), 0.3);
  EXPECT_LT(one["latency_s"]["ttft"]["p99"].get<double>(), 0.3);
  EXPECT_LT(naive["throughput"]["requests_per_s"].get<double>(), 0.3);
  // Against the unbatched node, the seed's deployment is well over 8x.
  EXPECT_GT(pp2["throughput"]["requests_per_s"].get<double>(),
            8 * naive["throughput"]["requests_per_s"].get<double>());
}

// The same question over the whole space: prima plan ranks two TP4 replicas first, well
// ahead of the seed's TP4 x PP2.
TEST(SeedClaims, Seed000PlanPrefersTwoTp4Replicas) {
  const std::string out = temp_dir("seed000_plan");
  auto r = run_prima("plan " + source_path("scenarios/seed_claims/seed000_plan.json") + " --out " +
                     out + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json p = read_json(out + "/plan.json");
  ASSERT_FALSE(p["ranked"].empty());
  const json& best = p["ranked"][0];
  EXPECT_EQ(best["config"]["tensor_parallel"], 4);
  EXPECT_EQ(best["config"]["pipeline_parallel"], 1);
  EXPECT_EQ(best["config"]["replicas"], 2);
  double seed_rate = 0;
  for (const auto& e : p["ranked"])
    if (e["config"]["tensor_parallel"] == 4 && e["config"]["pipeline_parallel"] == 2 &&
        e["config"]["quantization"] == "w8a8")
      seed_rate = e["max_rate_rps"].get<double>();
  EXPECT_GT(seed_rate, 0);
  EXPECT_GT(best["max_rate_rps"].get<double>(), 2 * seed_rate);
}

// Seed 001: 142 QPS is served, but 128-token answers take well over 218 ms on average.
TEST(SeedClaims, Seed001QpsReachableMeanLatencyNot) {
  json r = simulate("seed001_llama2_13b_a100_node.json", "");
  ASSERT_FALSE(r.empty());
  EXPECT_GT(r["throughput"]["requests_per_s"].get<double>(), 135);
  EXPECT_GT(r["latency_s"]["e2e"]["mean"].get<double>(), 1.0);
  json short_answers =
      simulate("seed001_llama2_13b_a100_node.json", "--set workload.output_tokens=16");
  ASSERT_FALSE(short_answers.empty());
  EXPECT_LT(short_answers["latency_s"]["e2e"]["mean"].get<double>(), 0.218);
}

// Seed 004: a 1M-token context does not fit on 32 GB accelerators; throughput is far from
// 2000 QPS.
TEST(SeedClaims, Seed004MillionTokenContextDoesNotFit) {
  auto r =
      run_prima("simulate " + source_path("scenarios/seed_claims/seed004_moe_1t_domestic.json") +
                " --set scheduler.max_model_len=1048576 --no-files -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("one sequence of 1048576 tokens needs 73.7 GB per GPU"), std::string::npos)
      << r.err;
  json t = simulate("seed004_moe_1t_domestic.json",
                    "--set duration=30s --set workload.arrival.rate_rps=20");
  ASSERT_FALSE(t.empty());
  EXPECT_LT(t["throughput"]["requests_per_s"].get<double>(), 20);
}

// Seed 004's 1M-token contexts with context parallelism (TP32 x CP32): each GPU holds 1/32 of
// the MLA latent, so the KV cache takes five 1M-token sequences and one completes; its prefill
// takes minutes (quadratic attention, all-reduces and the query exchange over 100 Gb/s NICs),
// its decode milliseconds.
TEST(SeedClaims, Seed004MillionTokenContextFitsWithContextParallelism) {
  json r = simulate("seed004_moe_1t_million_context.json", "--set workload.output_tokens=16");
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r["deployment"]["context_parallel"].get<int>(), 32);
  EXPECT_GE(r["kv_cache"]["tokens_per_replica"].get<std::int64_t>(), 5'000'000);
  EXPECT_GE(r["requests"]["completed"].get<int>(), 1);
  EXPECT_EQ(r["requests"]["failed"].get<int>(), 0);
  EXPECT_GT(r["latency_s"]["ttft"]["p50"].get<double>(), 300);
  EXPECT_LT(r["latency_s"]["tpot"]["p50"].get<double>(), 0.1);
}

// Seed 004 with expert parallelism (TP1 x DP48, EP48): several times TP32's throughput at the
// same offered load, yet far from 2000 QPS, and a 1M-token sequence still fits on no GPU of
// its attention group.
TEST(SeedClaims, Seed004ExpertParallelismHelpsButNotTo2000Qps) {
  const std::string sets = "--set duration=30s --set workload.arrival.rate_rps=20";
  json tp = simulate("seed004_moe_1t_domestic.json", sets);
  json ep = simulate("seed004_moe_1t_domestic_ep.json", sets);
  ASSERT_FALSE(tp.empty() || ep.empty());
  EXPECT_EQ(ep["deployment"]["expert_parallel"].get<int>(), 48);
  const double tp_rps = tp["throughput"]["requests_per_s"].get<double>();
  const double ep_rps = ep["throughput"]["requests_per_s"].get<double>();
  EXPECT_GT(ep_rps, 4 * tp_rps);
  EXPECT_LT(ep_rps, 20);
  auto r =
      run_prima("simulate " + source_path("scenarios/seed_claims/seed004_moe_1t_domestic_ep.json") +
                " --set scheduler.max_model_len=1048576 --no-files -q");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(
      r.err.find("tokens per attention DP group; one sequence of 1048576 tokens needs 73.7 GB"),
      std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace prima::testing
