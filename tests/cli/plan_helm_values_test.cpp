// `prima plan --emit-helm-values`: how a replica's ranks spread over pods, the values written
// for the first aggregated configuration of a ranking (a disaggregated winner is passed over
// with a note), and the refusal when nothing met the SLO.
#include "cli/plan_helm_values.h"

#include <gtest/gtest.h>

namespace prima::cli {
namespace {

using config::Json;

TEST(PlanHelmValues, RanksSpreadOverTheFewestEqualPodsThatFitANode) {
  EXPECT_EQ(pods_for_ranks(4, 8), std::make_pair(1, 4));
  EXPECT_EQ(pods_for_ranks(8, 8), std::make_pair(1, 8));
  EXPECT_EQ(pods_for_ranks(8, 4), std::make_pair(2, 4));
  EXPECT_EQ(pods_for_ranks(16, 8), std::make_pair(2, 8));
  EXPECT_EQ(pods_for_ranks(6, 4), std::make_pair(2, 3));   // 3 + 3, not 4 + 2
  EXPECT_EQ(pods_for_ranks(10, 4), std::make_pair(5, 2));  // 3 pods cannot split 10 evenly
  EXPECT_EQ(pods_for_ranks(1, 0), std::make_pair(1, 1));
}

capacity::PlanSpec small_spec() {
  const Json plan = Json::parse(R"({"name": "hv", "slo": {"ttft_p99": "500ms"},
    "scenario": {"name": "s", "model": "llama-2-13b", "topology": "dgx_a100",
                 "deployment": {"parallel_strategy": {"tensor_parallel": 1}},
                 "scheduler": {"max_num_seqs": 48},
                 "health": {"min_available": 2},
                 "workload": {"arrival": {"type": "poisson", "rate_rps": 2},
                              "prompt_tokens": 300, "output_tokens": 60}},
    "search": {"topologies": ["dgx_a100"], "tensor_parallel": [1]}})");
  auto spec = capacity::parse_plan(plan, "plan.json", ".");
  if (!spec.ok()) ADD_FAILURE() << spec.status().message();
  return spec.ok() ? *spec : capacity::PlanSpec{};
}

Json entry(const std::string& key, bool disaggregated, std::vector<std::string> sets) {
  return {{"key", key},
          {"config", {{"disaggregation", disaggregated}}},
          {"max_rate_rps", 3.5},
          {"goodput_per_gpu", 0.2},
          {"cost_per_million_tokens", nullptr},
          {"sets", sets}};
}

TEST(PlanHelmValues, TheFirstAggregatedConfigurationBecomesTheValues) {
  Json plan;
  plan["ranked"] = {
      entry("disagg", true, {"deployment.replicas=2"}),
      entry("tp8 pp2 x1", false,
            {"deployment.parallel_strategy.tensor_parallel=8",
             "deployment.parallel_strategy.pipeline_parallel=2", "deployment.replicas=1",
             "topology={\"base\": \"dgx_a100\", "
             "\"nodes\": 2}"})};
  std::string note;
  auto y = helm_values_yaml(small_spec(), plan, &note);
  ASSERT_TRUE(y.ok()) << y.status().message();
  EXPECT_NE(note.find("disagg is disaggregated"), std::string::npos) << note;
  for (const char* want :
       {"# The configuration ranked first: tp8 pp2 x1\n", "replicaCount: 1\n",
        "gpuType: \"A100-SXM4-80GB\"\n", "  tensorParallel: 8\n", "  pipelineParallel: 2\n",
        "podsPerReplica: 2\n", "gpusPerPod: 8\n", "  maxNumSeqs: 48\n", "  backend: real\n",
        "  source: url\n", "  url: \"\"\n",
        "podDisruptionBudget:\n  enabled: true\n  "
        "minAvailable: 2\n",
        "autoscaling:\n  enabled: false\n"})
    EXPECT_NE(y->values.find(want), std::string::npos) << want << "\n" << y->values;
  // The chart refuses a scenario with the real backend: it goes to the sim overlay, as the
  // configuration's JSON inside the YAML (4 spaces deeper).
  EXPECT_EQ(y->values.find("scenario:"), std::string::npos);
  EXPECT_NE(y->sim_values.find("serve:\n  scenario: {\n"), std::string::npos) << y->sim_values;
  EXPECT_NE(y->sim_values.find("\"tensor_parallel\": 8"), std::string::npos);
}

TEST(PlanHelmValues, TheSimOverlaySitsBesideTheValues) {
  EXPECT_EQ(sim_values_path("out/values.yaml"), "out/values.sim.yaml");
  EXPECT_EQ(sim_values_path("v"), "v.sim.yaml");
  EXPECT_EQ(sim_values_path("a.b/v"), "a.b/v.sim.yaml");
  EXPECT_EQ(sim_values_path(".hidden"), ".hidden.sim.yaml");
}

TEST(PlanHelmValues, NothingToDeployIsAnError) {
  Json plan;
  plan["ranked"] = Json::array();
  std::string note;
  auto y = helm_values_yaml(small_spec(), plan, &note);
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("no configuration met the SLO"), std::string::npos);
  plan["ranked"] = {entry("disagg", true, {})};
  y = helm_values_yaml(small_spec(), plan, &note);
  ASSERT_FALSE(y.ok());
  EXPECT_NE(y.status().message().find("every configuration that met the SLO is disaggregated"),
            std::string::npos);
}

}  // namespace
}  // namespace prima::cli
