// run_simulation with the cluster policies on (autoscaler, disaggregation, response cache,
// warm-up): report sections, conservation, the max-replicas cap. The scenario's cluster
// objects are given as --set overrides of the default scenario.
// Each TEST runs in its own process (ctest), since SimGrid allows one engine per process.
#include <gtest/gtest.h>

#include <cstdio>

#include "backends/sim/simulation.h"

namespace prima::sim {
namespace {

scenario::Scenario scenario(std::vector<std::string> sets, const char* cluster_json) {
  // The cluster objects go in as --set overrides, parsed with the rest of the scenario.
  config::Json extra = config::Json::parse(cluster_json);
  for (auto it = extra.begin(); it != extra.end(); ++it)
    sets.push_back(it.key() + "=" + it.value().dump());
  auto sc = scenario::load_scenario("", sets);
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  return *sc;
}

void expect_conservation(const nlohmann::ordered_json& r) {
  const auto& q = r["requests"];
  EXPECT_GT(q["submitted"].get<std::int64_t>(), 0);
  EXPECT_EQ(q["submitted"].get<std::int64_t>(), q["completed"].get<std::int64_t>()) << q.dump();
}

TEST(SimulationCluster, AutoscalerLoadsWeightsAndReports) {
  auto sc = scenario({"duration=60s", "deployment.parallel_strategy.pipeline_parallel=1",
                      "deployment.parallel_strategy.micro_batch=0", "deployment.replicas=1",
                      "workload.arrival.rate_rps=6"},
                     R"({"autoscaler": {"min_replicas": 1, "max_replicas": 8, "interval": "5s",
                                        "target_utilization": 0.5}})");
  auto out = run_simulation(sc);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const auto& r = out->report;
  ASSERT_TRUE(r.contains("autoscaler")) << r.dump();
  const auto& a = r["autoscaler"];
  EXPECT_EQ(a["max_replicas"], 2);  // 8 GPUs / TP4: capped
  EXPECT_EQ(a["max_replicas_requested"], 8);
  EXPECT_GE(a["scale_ups"].get<int>(), 1) << a.dump();
  EXPECT_GE(a["replicas_max_seen"].get<int>(), 2);
  EXPECT_LE(a["replicas_max_seen"].get<int>(), 2);
  const double u = a["utilization_of_provisioned"].get<double>();
  EXPECT_GT(u, 0);
  EXPECT_LE(u, 1);
  EXPECT_EQ(r["gpus"]["count"], 8);  // every GPU a replica may hold
  expect_conservation(r);
  // The second replica serves only after its 4 GPUs read their weights from storage (they
  // share the storage host's bandwidth), at least one interval after the start.
  const double load_s = out->fit.weight_bytes * 4 / sc.topology.storage.read_bandwidth_Bps;
  double up_at = -1;
  for (const auto& row : out->recorder->timeline())
    if (row.replicas_up >= 2) {
      up_at = row.t_s;
      break;
    }
  ASSERT_GT(up_at, 0);
  bool saw_loading = false;
  for (const auto& row : out->recorder->timeline())
    if (row.t_s < up_at && row.replicas_loading == 1) saw_loading = true;
  EXPECT_TRUE(saw_loading);
  EXPECT_GE(up_at, 5 + load_s) << "weights: " << out->fit.weight_bytes << " B per GPU";
  std::printf("second replica up by t=%.0f s (load alone %.1f s)\n", up_at, load_s);
}

TEST(SimulationCluster, DisaggregatedPoolsHandOffKv) {
  auto sc = scenario({"duration=30s", "deployment.parallel_strategy.pipeline_parallel=1",
                      "deployment.parallel_strategy.micro_batch=0", "deployment.replicas=2"},
                     R"({"disaggregation": {"prefill_replicas": 1, "decode_replicas": 1}})");
  auto out = run_simulation(sc);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const auto& r = out->report;
  ASSERT_TRUE(r.contains("disaggregation"));
  EXPECT_GT(r["disaggregation"]["handoffs"].get<int>(), 0);
  EXPECT_GT(r["disaggregation"]["handoff_gb"].get<double>(), 0);
  expect_conservation(r);
}

TEST(SimulationCluster, DisaggregationMustCoverTheReplicas) {
  auto sc = scenario({"duration=10s"},
                     R"({"disaggregation": {"prefill_replicas": 1, "decode_replicas": 1}})");
  auto out = run_simulation(sc);
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("/disaggregation"), std::string::npos);
}

TEST(SimulationCluster, ResponseCacheAndWarmupReport) {
  auto sc = scenario({"duration=20s"}, R"({"response_cache": {"enabled": true},
                                            "warmup": {"requests": 16}})");
  auto out = run_simulation(sc);
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const auto& r = out->report;
  ASSERT_TRUE(r.contains("response_cache"));
  EXPECT_TRUE(r["response_cache"].contains("hit_rate"));
  ASSERT_TRUE(r.contains("warmup"));
  EXPECT_EQ(r["warmup"]["requests"], 16);
  EXPECT_EQ(r["warmup"]["completed"], 16);
  expect_conservation(r);
}

}  // namespace
}  // namespace prima::sim
