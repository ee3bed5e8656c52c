// Every report says how far to trust it: report.json's "fidelity", the printed simulate
// summary and report.html for a GPU no profile covers ("roofline only, uncalibrated") and for
// one a scenario's profile file calibrates (its name, source and measured error); plan.json,
// the printed plan and its report.html per GPU type of the search space.
#include <gtest/gtest.h>

#include <fstream>

#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

using nlohmann::json;

constexpr const char* kProfiled = "test-gpu-profiled";  // calibrated by the profile below
constexpr const char* kPlain = "test-gpu-plain";        // no profile, built-in or given

bool contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

// An A100-like GPU under a name no built-in profile has.
json gpu(const std::string& name) {
  return {{"name", name},
          {"source", "test"},
          {"memory", "80GB"},
          {"hbm_bandwidth", "2039GB/s"},
          {"fp16_tflops", 312}};
}

json topology(const std::string& gpu_name) {
  return {{"base", "dgx_a100"}, {"nodes", 1}, {"name", gpu_name}, {"gpu", gpu(gpu_name)}};
}

// A few seconds of Llama-2-7B on one GPU of `gpu_name`; "calibration": "profile.json" when
// `calibrated`.
json scenario(const std::string& gpu_name, bool calibrated) {
  json s = {{"name", "fidelity"},
            {"seed", 3},
            {"duration", "5s"},
            {"model", "llama-2-7b"},
            {"topology", topology(gpu_name)},
            {"workload",
             {{"arrival", {{"type", "poisson"}, {"rate_rps", 1}}},
              {"prompt_tokens", {{"type", "uniform"}, {"min", 50}, {"max", 300}}},
              {"output_tokens", {{"type", "uniform"}, {"min", 10}, {"max", 40}}}}}};
  if (calibrated) s["calibration"] = "profile.json";
  return s;
}

// A hardware profile of kProfiled with a measured error, as topologies/profiles/*.json hold.
void write_profile(const std::string& dir) {
  const json p = {{"profile", kProfiled},
                  {"description", "a test profile"},
                  {"source", "test measurements of ten steps"},
                  {"efficiency", {{"gemm_memory", 0.8}, {"step_overhead_s", "1ms"}}},
                  {"fidelity",
                   {{"calibration_data", "ten test steps"},
                    {"points", 10},
                    {"median_abs_error", 0.031},
                    {"p90_abs_error", 0.06},
                    {"max_abs_error", 0.08}}}};
  std::ofstream(dir + "/profile.json") << p.dump(1);
}

const char* kProfiledSummary =
    "profile test-gpu-profiled: median error 3.1%, max 8.0% on 10 points (ten test steps)";

struct SimRun {
  RunResult result;
  json report;
  std::string html;
};

SimRun simulate(const std::string& name, const json& sc) {
  const std::string dir = temp_dir(name);
  write_profile(dir);
  std::ofstream(dir + "/scenario.json") << sc.dump(1);
  SimRun r;
  r.result = run_prima("simulate " + dir + "/scenario.json --out " + dir + "/out --html -q");
  if (r.result.exit_code != 0) return r;
  r.report = read_json(dir + "/out/report.json");
  r.html = read_file(dir + "/out/report.html");
  return r;
}

TEST(Fidelity, AGpuWithoutAProfileIsRooflineOnly) {
  const SimRun r = simulate("fidelity_plain", scenario(kPlain, false));
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  ASSERT_TRUE(r.report.contains("fidelity")) << r.report.dump(1);
  const json& f = r.report["fidelity"];
  EXPECT_EQ(f["calibrated"], false);
  EXPECT_TRUE(f["profile"].is_null());
  EXPECT_EQ(f["summary"], "roofline only, uncalibrated");
  EXPECT_FALSE(f.contains("median_abs_error"));
  EXPECT_TRUE(contains(r.result.out, "  fidelity   roofline only, uncalibrated\n")) << r.result.out;
  // The HTML banner, in the warning style.
  EXPECT_TRUE(contains(r.html,
                       "<div class=\"fidelity uncalibrated\"><b>Fidelity:</b> roofline "
                       "only, uncalibrated"))
      << r.html.substr(0, 3000);
}

TEST(Fidelity, AScenarioProfileGivesItsNameSourceAndMeasuredError) {
  const SimRun r = simulate("fidelity_profiled", scenario(kProfiled, true));
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const json& f = r.report["fidelity"];
  EXPECT_EQ(f["calibrated"], true);
  EXPECT_EQ(f["profile"], kProfiled);
  EXPECT_EQ(f["source"], "test measurements of ten steps");
  EXPECT_EQ(f["calibration_data"], "ten test steps");
  EXPECT_EQ(f["points"], 10);
  EXPECT_DOUBLE_EQ(f["median_abs_error"].get<double>(), 0.031);
  EXPECT_DOUBLE_EQ(f["p90_abs_error"].get<double>(), 0.06);
  EXPECT_DOUBLE_EQ(f["max_abs_error"].get<double>(), 0.08);
  EXPECT_EQ(f["summary"], kProfiledSummary);
  EXPECT_TRUE(contains(r.result.out, std::string("  fidelity   ") + kProfiledSummary + "\n"))
      << r.result.out;
  EXPECT_TRUE(
      contains(r.html, std::string("<div class=\"fidelity\"><b>Fidelity:</b> ") + kProfiledSummary))
      << r.html.substr(0, 3000);
  EXPECT_FALSE(contains(r.html, "fidelity uncalibrated"));
}

// The profile calibrates its own GPU only: on another GPU the same scenario is roofline only.
TEST(Fidelity, AProfileOfAnotherGpuDoesNotApply) {
  const SimRun r = simulate("fidelity_other", scenario(kPlain, true));
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  EXPECT_EQ(r.report["fidelity"]["calibrated"], false);
  EXPECT_EQ(r.report["fidelity"]["summary"], "roofline only, uncalibrated");
}

TEST(Fidelity, PlanGivesTheFidelityOfEachGpuType) {
  const std::string dir = temp_dir("fidelity_plan");
  write_profile(dir);
  std::ofstream(dir + "/base.json") << scenario(kProfiled, true).dump(1);
  const json plan = {
      {"name", "fidelity"},
      {"scenario", "base.json"},
      {"slo", {{"e2e_p99", "60s"}}},
      {"search", {{"topologies", {topology(kProfiled), topology(kPlain)}}, {"gpus", {1}}}},
      {"rate", {{"min_rps", 0.5}, {"max_rps", 1}, {"duration", "5s"}}},
      {"price_table", "prices.json"}};
  std::ofstream(dir + "/plan.json") << plan.dump(1);
  // Test GPU types need their own prices and power (every GPU searched does).
  json prices = {{"gpus", json::object()}};
  for (const char* g : {kProfiled, kPlain})
    prices["gpus"][g] = {{"price_per_gpu_hour", 1},
                         {"price_source", "test"},
                         {"idle_watts", 50},
                         {"peak_watts", 300},
                         {"power_source", "test"}};
  std::ofstream(dir + "/prices.json") << prices.dump(1);
  auto r = run_prima("plan " + dir + "/plan.json --out " + dir + "/out --jobs 2 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json p = read_json(dir + "/out/plan.json");
  ASSERT_TRUE(p.contains("fidelity")) << p.dump(1);
  const json& f = p["fidelity"];
  ASSERT_EQ(f.size(), 2u) << f.dump(1);
  EXPECT_EQ(f[kProfiled]["calibrated"], true);
  EXPECT_EQ(f[kProfiled]["summary"], kProfiledSummary);
  EXPECT_DOUBLE_EQ(f[kProfiled]["max_abs_error"].get<double>(), 0.08);
  EXPECT_EQ(f[kPlain]["calibrated"], false);
  EXPECT_EQ(f[kPlain]["summary"], "roofline only, uncalibrated");
  // Every candidate's GPU type has an entry.
  ASSERT_FALSE(p["ranked"].empty()) << p.dump(1);
  for (const auto& e : p["ranked"]) EXPECT_TRUE(f.contains(e["config"]["gpu"])) << e.dump();

  EXPECT_TRUE(contains(r.out, std::string("  fidelity   ") + kProfiled + ": " + kProfiledSummary))
      << r.out;
  EXPECT_TRUE(
      contains(r.out, std::string("  fidelity   ") + kPlain + ": roofline only, uncalibrated"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "model err")) << r.out;
  const std::string html = read_file(dir + "/out/report.html");
  EXPECT_TRUE(
      contains(html, std::string("<b>Fidelity on ") + kProfiled + ":</b> " + kProfiledSummary));
  EXPECT_TRUE(contains(html, std::string("<div class=\"fidelity uncalibrated\"><b>Fidelity on ") +
                                 kPlain + ":</b> roofline only, uncalibrated"));
  EXPECT_TRUE(contains(html, "model error (median)"));
}

}  // namespace
}  // namespace prima::testing
