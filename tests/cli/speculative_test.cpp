// Speculative decoding end to end (`prima simulate` with a "speculative" section): one
// request decoding alone, so each step's time is the cost model's for one sequence; the
// simulated TPOT is the closed form t_step / E with E = (1 - a^(k+1)) / (1 - a) tokens per
// step, t_step the target verifying 1 + k tokens plus k draft passes. The same check without
// speculation (TPOT = the plain decode step) shows the method. Bad sections are exit 2
// naming the file and JSON path.
#include <gtest/gtest.h>

#include <fstream>

#include "engine/perf/cost_model.h"
#include "engine/scenario/scenario.h"
#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

using nlohmann::json;

constexpr int kPrompt = 64, kOutput = 3000;

json base_scenario() {
  return json::parse(R"({"name": "spec", "seed": 3, "duration": "1s", "model": "llama-2-7b",
   "topology": {"base": "dgx_a100", "nodes": 1},
   "deployment": {"parallel_strategy": {"tensor_parallel": 1, "pipeline_parallel": 1},
                  "replicas": 1},
   "workload": {"arrival": {"type": "constant", "rate_rps": 1},
     "prompt_tokens": {"type": "fixed", "value": 64},
     "output_tokens": {"type": "fixed", "value": 3000}}})");
}

// The cost model's time of one step of one sequence whose cache holds c0 tokens before it,
// verifying k drafts (k = 0: a plain decode step), as the sim backend builds the model.
double step_s(const scenario::Scenario& sc, int c0, int k) {
  perf::CostModel cm(sc.model, sc.quantization, sc.topology.gpu, sc.plan,
                     perf::resolve(sc.calibration, sc.topology.gpu.name).efficiency,
                     sc.memory.kv_bytes_per_element);
  if (sc.speculative.enabled()) cm.set_draft(sc.speculative.draft, sc.quantization);
  BatchShape b;
  SeqWork w;
  w.num_tokens = 1 + k;
  w.context_len = c0 + 1 + k;
  w.samples = true;
  w.draft_tokens = k;
  b.add(w);
  const perf::StepCost cost = cm.step(b);
  double t = cost.overhead_s;
  for (const auto& s : cost.stages) t += s.compute_s;
  return t;
}

struct SpecRun {
  double tpot_s = 0;
  double closed_form_s = 0;
};

SpecRun run(const json& spec) {
  json j = base_scenario();
  if (!spec.is_null()) j["speculative"] = spec;
  const std::string dir = temp_dir("speculative");
  std::ofstream(dir + "/s.json") << j.dump();
  std::string failure;
  const json rep = simulate_report(dir + "/s.json", &failure);
  EXPECT_FALSE(rep.is_null()) << failure;
  SpecRun r;
  if (rep.is_null()) return r;
  EXPECT_EQ(rep["requests"]["completed"], 1);
  r.tpot_s = rep["latency_s"]["tpot"]["mean"].get<double>();
  auto sc = scenario::parse_scenario(j, dir + "/s.json", dir);
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  const int k = spec.is_null() ? 0 : spec["num_tokens"].get<int>();
  const double a = spec.is_null() ? 0 : spec["acceptance_rate"].get<double>();
  // The step at the middle of the output (the step time grows slowly with the context).
  r.closed_form_s =
      step_s(*sc, kPrompt + kOutput / 2, k) / scenario::SpeculativeSpec::expected_tokens(k, a);
  return r;
}

TEST(Speculative, TpotIsTheClosedFormWithAndWithoutDrafts) {
  const SpecRun plain = run(json());
  EXPECT_NEAR(plain.tpot_s, plain.closed_form_s, 0.02 * plain.closed_form_s);
  const SpecRun mtp = run({{"method", "mtp"}, {"num_tokens", 3}, {"acceptance_rate", 0.7}});
  EXPECT_NEAR(mtp.tpot_s, mtp.closed_form_s, 0.04 * mtp.closed_form_s);
  EXPECT_LT(mtp.tpot_s, 0.5 * plain.tpot_s);  // 2.53 tokens per step for ~1.07x the step
  const SpecRun draft = run({{"method", "draft"},
                             {"num_tokens", 4},
                             {"acceptance_rate", 0.8},
                             {"draft_model", "smollm2-135m"}});
  EXPECT_NEAR(draft.tpot_s, draft.closed_form_s, 0.04 * draft.closed_form_s);
  // Nothing accepted: every step verifies and drafts for one token, slower than plain.
  const SpecRun none = run({{"method", "mtp"}, {"num_tokens", 3}, {"acceptance_rate", 0.0}});
  EXPECT_NEAR(none.tpot_s, none.closed_form_s, 0.02 * none.closed_form_s);
  EXPECT_GT(none.tpot_s, plain.tpot_s);
}

void expect_bad(const json& spec, const std::vector<std::string>& needles) {
  json j = base_scenario();
  j["speculative"] = spec;
  const std::string dir = temp_dir("speculative_bad");
  std::ofstream(dir + "/s.json") << j.dump();
  auto r = run_prima("simulate " + dir + "/s.json -q --json");
  EXPECT_EQ(r.exit_code, 2) << spec.dump() << ": " << r.err;
  for (const auto& n : needles)
    EXPECT_NE(r.err.find(n), std::string::npos) << "missing '" << n << "' in: " << r.err;
}

TEST(Speculative, BadSectionsAreExitTwoNamingThePath) {
  expect_bad({{"method", "mtp"}, {"num_tokens", 3}, {"acceptance_rate", 1.5}},
             {"s.json", "/speculative/acceptance_rate", "expected a number in [0, 1]", "1.5"});
  expect_bad({{"method", "mtp"}, {"num_tokens", 3}, {"acceptance_rate", -0.1}},
             {"/speculative/acceptance_rate"});
  expect_bad({{"method", "draft"}, {"num_tokens", 3}, {"acceptance_rate", 0.5}},
             {"/speculative/draft_model", "needs the draft model"});
  expect_bad({{"method", "mtp"},
              {"num_tokens", 3},
              {"acceptance_rate", 0.5},
              {"draft_model", "llama-2-7b"}},
             {"/speculative/draft_model", "no draft model"});
  expect_bad({{"method", "mtp"}, {"num_tokens", 0}, {"acceptance_rate", 0.5}},
             {"/speculative/num_tokens"});
  expect_bad({{"method", "eagle"}, {"num_tokens", 2}, {"acceptance_rate", 0.5}},
             {"/speculative/method", "draft", "mtp"});
  expect_bad(
      {{"method", "draft"}, {"num_tokens", 2}, {"acceptance_rate", 0.5}, {"draft_model", "gpt-5"}},
      {"/speculative/draft_model"});
}

}  // namespace
}  // namespace prima::testing
