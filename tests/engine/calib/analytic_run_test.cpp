// The analytic run's engine behaves as the engine it names: a flood of long prompts whose KV
// does not all fit preempts by recompute, and with the engine's prefix caching (vLLM V1's
// default) a preempted request finds its own prompt blocks again, so little prefill is redone.
#include "engine/calib/analytic_run.h"

#include <gtest/gtest.h>

#include "engine/scenario/scenario.h"

namespace prima::calib {
namespace {

using config::Json;

nlohmann::ordered_json flood(bool prefix_caching) {
  // 40 prompts of 32,000 tokens at once on one H100: its KV cache holds about a dozen of them
  // (Llama-3.1-8B, 128 KiB a token); vLLM takes 8,192 tokens a step.
  Json j = Json::parse(R"({"model": "llama-3.1-8b", "engine": "vllm",
      "topology": {"base": "h200_node", "gpu": "H100-SXM5-80GB", "nodes": 1},
      "workload": {"arrival": {"type": "constant", "rate_rps": 1e9}, "max_requests": 40,
                   "prompt_tokens": 32000, "output_tokens": 100},
      "duration": "86400s", "max_drain": "86400s", "seed": 1})");
  j["scheduler"] = {{"enable_prefix_caching", prefix_caching}};
  auto sc = scenario::parse_scenario(j, "flood.json", ".");
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  if (!sc.ok()) return {};
  auto r = run_analytic(*sc);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? *r : nlohmann::ordered_json{};
}

TEST(AnalyticRun, PrefixCachingSparesAPreemptedRequestItsPrefill) {
  const auto off = flood(false), on = flood(true);
  ASSERT_FALSE(off.empty());
  ASSERT_FALSE(on.empty());
  EXPECT_EQ(off["requests"]["completed"], 40);
  EXPECT_EQ(on["requests"]["completed"], 40);
  const int preempted_off = off["preemptions"].get<int>();
  const int preempted_on = on["preemptions"].get<int>();
  EXPECT_GT(preempted_off, 0);  // the KV does not hold the flood: vLLM preempts
  // Without the cache every preemption redoes the prompt's prefill: the run takes longer.
  const double t_off = off["simulated_seconds"].get<double>();
  const double t_on = on["simulated_seconds"].get<double>();
  EXPECT_LT(t_on, 0.8 * t_off) << "with the cache " << t_on << " s, without " << t_off << " s";
  EXPECT_LE(preempted_on, preempted_off);
}

}  // namespace
}  // namespace prima::calib
