// `prima replay --fit` with --measured given more than once: the fit is to all the runs
// together (each replayed with its own arrivals and lengths), recovers the parameters both runs
// were made with, writes every run's files and the joint fit, and names the bad file when one
// of the runs is bad.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

const std::string kScenario = source_path("tests/data/cli/replay_small.json");
// Light load, compute-bound prefill: the two fitted parameters are well identified.
const std::string kFitScenario = source_path("tests/data/cli/replay_fit.json");
// The truth: 4 ms per step and GEMMs at half of HBM bandwidth (defaults 1.5 ms, 0.85).
// The truth: 4 ms per step (an engine term) and GEMMs at half of HBM bandwidth (a hardware
// term), on the uncalibrated engine's other terms.
const std::string kTruth =
    " --set 'calibration.defaults={\"gemm_memory\": 0.5}' --set "
    "'engine={\"base\": \"generic\", \"terms\": {\"step_overhead_s\": 0.004}}'";

bool exists(const std::string& path) {
  return std::filesystem::exists(path);
}

TEST(ReplayJointFit, TwoRunsFitTogetherAndEachGetsItsFiles) {
  const std::string dir = temp_dir("replay_joint_fit");
  for (const char* seed : {"1", "2"}) {
    auto sim = run_prima("simulate " + kFitScenario + kTruth + " --set seed=" + seed + " --out " +
                         dir + "/truth" + seed + " -q");
    ASSERT_EQ(sim.exit_code, 0) << sim.err;
  }
  const std::string a = dir + "/truth1/requests.csv", b = dir + "/truth2/requests.csv";
  auto r = run_prima("replay -m " + a + " --measured " + b + " -s " + kFitScenario +
                     " --set 'calibration.defaults={}' --set engine=generic --fit --fit-params "
                     "step_overhead_s,gemm_memory --out " +
                     dir + "/fit --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("2 runs together"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("[fit] iter 1/"), std::string::npos) << r.err;

  // --json prints DIR/fit.json: the runs, the shared values and the joint objective.
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j, read_json(dir + "/fit/fit.json"));
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["measured_file"], a);
  EXPECT_EQ(j["runs"][1]["measured_file"], b);
  EXPECT_EQ(j["runs"][1]["dir"], "run2");
  EXPECT_EQ(j["params"], nlohmann::json({"step_overhead_s", "gemm_memory"}));
  const double initial = j["objective"]["initial"].get<double>();
  const double fitted = j["objective"]["fitted"].get<double>();
  EXPECT_LE(fitted, initial);
  EXPECT_LT(fitted, 1e-4);
  // The joint objective is the mean of the runs'.
  double sum_initial = 0;
  for (const auto& run : j["runs"]) sum_initial += run["objective"]["initial"].get<double>();
  EXPECT_NEAR(initial, sum_initial / 2, 1e-12 + 1e-9 * initial);
  EXPECT_EQ(j["simulations"].get<int>(), 2 * j["evaluations"].get<int>());
  EXPECT_NEAR(j["fitted"]["step_overhead_s"].get<double>(), 0.004, 0.0004) << r.err;
  EXPECT_NEAR(j["fitted"]["gemm_memory"].get<double>(), 0.5, 0.05) << r.err;

  // Every run's files in its folder, its comparison naming the joint fit.
  for (const char* run : {"run1", "run2"}) {
    const std::string d = dir + "/fit/" + run;
    for (const char* f : {"comparison.json", "comparison.html", "per_request.csv", "trace.jsonl"})
      EXPECT_TRUE(exists(d + "/" + f)) << d << "/" << f;
    EXPECT_FALSE(exists(d + "/profile.json")) << d;
    const auto c = read_json(d + "/comparison.json");
    EXPECT_EQ(c["fit"]["fitted"], j["fitted"]);
    EXPECT_EQ(c["fit"]["profile"], "../profile.json");
    EXPECT_EQ(c["fit"]["joint"]["runs"], nlohmann::json({a, b}));
    EXPECT_EQ(c["fit"]["joint"]["objective"], j["objective"]);
    EXPECT_LE(c["fit"]["objective"]["fitted"].get<double>(),
              c["fit"]["objective"]["initial"].get<double>());
  }
  EXPECT_NE(read_json(dir + "/fit/run1/comparison.json")["requests"],
            read_json(dir + "/fit/run2/comparison.json")["requests"]);
  EXPECT_FALSE(exists(dir + "/fit/comparison.json"));
  // DIR/engine.json: the engine with the fitted terms, and with two runs its out-of-sample
  // error (each run replayed with a fit to the other).
  const auto e = read_json(dir + "/fit/engine.json");
  EXPECT_NEAR(e["gpus"]["A100-SXM4-80GB"]["step_overhead_s"].get<double>(), 0.004, 0.0004);
  const auto& f = e["fidelity"]["A100-SXM4-80GB"];
  EXPECT_GT(f["out_of_sample"]["points"].get<int>(), 0);
  EXPECT_LT(f["out_of_sample"]["median_abs_error"].get<double>(), 0.05);
  EXPECT_EQ(f["sources"], nlohmann::json({a, b}));

  // One profile for both: the fitted values, its error over both runs' figures.
  const auto p = read_json(dir + "/fit/profile.json");
  EXPECT_FALSE(p["efficiency"].contains("step_overhead_s"));  // an engine term: engine.json
  EXPECT_EQ(p["efficiency"]["gemm_memory"], j["fitted"]["gemm_memory"]);
  EXPECT_NE(p["description"].get<std::string>().find("2 runs together"), std::string::npos);
  int points = 0;  // the figures with an error in both runs' fitted comparisons
  for (const char* run : {"run1", "run2"}) {
    const auto metrics = read_json(dir + "/fit/" + run + "/comparison.json")["fit"]["metrics"];
    for (const auto& figures : metrics)
      for (const char* stat : {"mean", "p50", "p90", "p99"})
        points += !figures[stat]["error"].is_null();
  }
  EXPECT_EQ(p["fidelity"]["points"].get<int>(), points);
  EXPECT_EQ(j["fidelity"]["points"], p["fidelity"]["points"]);
}

TEST(ReplayJointFit, BadInputNamesTheRunOrTheFlag) {
  const std::string dir = temp_dir("replay_joint_bad");
  const std::string head = "arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n";
  const std::string good = dir + "/good.csv", bad = dir + "/bad.csv", big = dir + "/big.csv";
  std::ofstream(good) << head << "0,100,10,0.05,0.2\n1,120,12,0.06,0.25\n";
  std::ofstream(bad) << head << "0,100,10,0.05,0.2\n1,100,10,0.05,abc\n";
  std::ofstream(big) << head << "0,100,10,0.05,0.2\n1,2000,100,0.05,0.2\n";
  struct Case {
    std::string args;
    std::vector<std::string> expect;
  } cases[] = {
      {"-m " + good + " -m " + bad + " --fit", {"bad.csv:3: e2e_s: expected a number"}},
      {"-m " + good + " -m " + big + " --fit",
       {"big.csv:3: prompt_tokens + output_tokens", "max_model_len 2048"}},
      {"-m " + good + " -m " + dir + "/nope.csv --fit", {"nope.csv: cannot open"}},
      {"-m " + good + " -m " + good + " --fit", {"--measured " + good + " is given twice"}},
      {"-m " + good + " -m " + bad, {"several --measured runs need --fit"}},
  };
  for (const Case& c : cases) {
    auto r = run_prima("replay " + c.args + " -s " + kScenario + " --out " + dir + "/out");
    EXPECT_EQ(r.exit_code, 2) << c.args << ": " << r.err;
    for (const auto& e : c.expect)
      EXPECT_NE(r.err.find(e), std::string::npos) << c.args << ": got " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << ": " << r.err;
    EXPECT_EQ(r.out, "") << c.args;
  }
  EXPECT_FALSE(exists(dir + "/out/run1")) << "nothing is replayed before every run is read";
}

TEST(ReplayJointFit, HelpShowsTheJointForm) {
  auto r = run_prima("replay --help");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("-m low.jsonl -m high.jsonl"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("DIR/fit.json"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace prima::testing
