// The in-process analytic run (engine/calib/analytic_run.h) and the SimGrid simulation agree on
// what engine calibration runs: one replica on one node, its collectives on NVLink. Engine
// profiles are fitted on the one and used through the other, so they must give the same
// latencies and throughput.
#include <gtest/gtest.h>

#include "backends/sim/simulation.h"
#include "engine/calib/analytic_run.h"
#include "engine/scenario/scenario.h"

namespace prima {
namespace {

using config::Json;

void expect_agree(const std::string& text) {
  auto sc = scenario::parse_scenario(Json::parse(text), "agree.json", ".");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  auto a = calib::run_analytic(*sc);
  ASSERT_TRUE(a.ok()) << a.status().message();
  auto s = sim::run_simulation(*sc);
  ASSERT_TRUE(s.ok()) << s.status().message();
  const auto& al = (*a)["latency_s"];
  const auto& sl = s->report["latency_s"];
  for (const char* m : {"ttft", "tpot", "e2e"})
    for (const char* st : {"mean", "p50", "p99"}) {
      const double x = al[m][st].get<double>(), y = sl[m][st].get<double>();
      EXPECT_NEAR(x, y, 0.005 * y + 1e-6) << m << " " << st;
    }
  EXPECT_EQ((*a)["requests"]["completed"], s->report["requests"]["completed"]);
}

TEST(AnalyticRun, AgreesWithTheSimulationOnOneNode) {
  // A modern engine on H200 (CUDA graphs, custom all-reduce), TP4, Poisson near capacity.
  expect_agree(R"({"model": "llama-3-70b", "quantization": "fp8", "engine": "vllm",
      "topology": "h200_node", "deployment": {"parallel_strategy": {"tensor_parallel": 4}},
      "workload": {"arrival": {"type": "poisson", "rate_rps": 6},
                   "prompt_tokens": {"type": "uniform", "min": 200, "max": 1500},
                   "output_tokens": {"type": "uniform", "min": 50, "max": 400}},
      "duration": "40s", "seed": 3})");
}

// One SimGrid engine per process: one simulation per TEST.
TEST(AnalyticRun, AgreesOnTheLaunchBoundEngine) {
  // The 2023 engine (launch floors) on A100, TP1, a closed batch.
  expect_agree(R"({"model": "llama-2-7b", "engine": "splitwise-2023", "topology": "dgx_a100",
      "workload": {"arrival": {"type": "constant", "rate_rps": 1000}, "max_requests": 8,
                   "prompt_tokens": 128, "output_tokens": 128},
      "duration": "1s"})");
}

TEST(AnalyticRun, RefusesWhatItDoesNotModel) {
  auto sc = scenario::parse_scenario(Json::parse(R"({"model": "llama-2-7b",
      "topology": "dgx_a100", "deployment": {"replicas": 2},
      "workload": {"arrival": {"type": "poisson", "rate_rps": 1}, "prompt_tokens": 10,
                   "output_tokens": 10}})"),
                                     "r.json", ".");
  ASSERT_TRUE(sc.ok()) << sc.status().message();
  auto a = calib::run_analytic(*sc);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("2 replicas"), std::string::npos) << a.status().message();
}

}  // namespace
}  // namespace prima
