// Every report says how far to trust it: report.json's "fidelity", the printed simulate
// summary and report.html name the engine and state its out-of-sample error on the GPU (the
// in-sample fit and the hardware's microbenchmark error labelled beside it), say when it is
// unknown or the run is outside the calibrated range; plan.json, the printed plan and its
// report.html do so per GPU type of the search space.
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

// A hardware profile of kProfiled with its error on microbenchmarks, as
// topologies/profiles/*.json hold, and an engine measured on kProfiled (its out-of-sample error,
// as topologies/engines/*.json hold).
void write_profile(const std::string& dir) {
  const json p = {{"profile", kProfiled},
                  {"description", "a test profile"},
                  {"source", "test microbenchmarks"},
                  {"efficiency", {{"gemm_memory", 0.8}}},
                  {"fidelity",
                   {{"calibration_data", "ten test kernels"},
                    {"points", 10},
                    {"median_abs_error", 0.031},
                    {"p90_abs_error", 0.06},
                    {"max_abs_error", 0.08}}}};
  std::ofstream(dir + "/profile.json") << p.dump(1);
  const json e = {
      {"engine", "test-engine"},
      {"description", "a test engine"},
      {"source", "test serving runs"},
      {"terms", {{"step_overhead_s", "1ms"}}},
      {"fidelity",
       {{kProfiled,
         {{"sources", {"run A", "run B"}},
          {"out_of_sample", {{"points", 12}, {"median_abs_error", 0.062}, {"max_abs_error", 0.19}}},
          {"out_of_sample_by_metric",
           {{"ttft", {{"points", 6}, {"median_abs_error", 0.05}, {"max_abs_error", 0.19}}}}},
          {"in_sample", {{"points", 12}, {"median_abs_error", 0.03}, {"max_abs_error", 0.07}}},
          {"range",
           {{"min_params_b", 6},
            {"max_params_b", 8},
            {"min_tp", 1},
            {"max_tp", 1},
            {"max_batch", 256},
            {"max_context", 4096}}}}}}}};
  std::ofstream(dir + "/engine.json") << e.dump(1);
}

const char* kProfiledSummary =
    "engine test-engine on test-gpu-profiled: out-of-sample error median 6.2%, max 19.0% over 12 "
    "points of 2 sources (in-sample fit: median 3.0%); hardware profile test-gpu-profiled: median "
    "3.1% on 10 microbenchmarks";
const char* kUnmeasured =
    "engine test-engine on test-gpu-plain: no published measurement of this engine on this GPU "
    "in its calibration data; the error is unknown";

// A few seconds of Llama-2-7B on one GPU of `gpu_name`, with the test engine; the hardware
// profile when `calibrated`.
json scenario_with_engine(const std::string& gpu_name, bool calibrated) {
  json s = scenario(gpu_name, calibrated);
  s["engine"] = "engine.json";
  return s;
}

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

TEST(Fidelity, RooflineIsUncalibrated) {
  json sc = scenario(kPlain, false);
  sc["calibration"] = "roofline";
  const SimRun r = simulate("fidelity_roofline", sc);
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const json& f = r.report["fidelity"];
  EXPECT_EQ(f["calibrated"], false);
  EXPECT_EQ(f["engine"], "generic");
  EXPECT_EQ(f["summary"], "roofline only, uncalibrated");
  EXPECT_FALSE(f.contains("median_abs_error"));
  EXPECT_TRUE(contains(r.result.out, "  fidelity   roofline only, uncalibrated\n")) << r.result.out;
  EXPECT_TRUE(contains(r.html,
                       "<div class=\"fidelity uncalibrated\">Predicted with the generic engine "
                       "profile, <b>uncalibrated</b>: these figures have not been checked"))
      << r.html.substr(0, 3000);
}

// An engine never measured on the scenario's GPU: the report names the engine and says the
// error is unknown.
TEST(Fidelity, AnUnmeasuredGpuHasNoKnownError) {
  const SimRun r = simulate("fidelity_plain", scenario_with_engine(kPlain, false));
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const json& f = r.report["fidelity"];
  EXPECT_EQ(f["calibrated"], false);
  EXPECT_EQ(f["engine"], "test-engine");
  EXPECT_TRUE(f["hardware_profile"].is_null());
  EXPECT_EQ(f["summary"], kUnmeasured);
  EXPECT_TRUE(contains(r.result.out, std::string("  fidelity   ") + kUnmeasured + "\n"))
      << r.result.out;
  EXPECT_TRUE(contains(r.html, "<div class=\"fidelity uncalibrated\">")) << r.html.substr(0, 3000);
}

// The figure a report states is the engine's out-of-sample error on the GPU; the in-sample fit
// and the hardware's microbenchmark error are beside it, labelled.
TEST(Fidelity, TheReportStatesTheOutOfSampleError) {
  const SimRun r = simulate("fidelity_profiled", scenario_with_engine(kProfiled, true));
  ASSERT_EQ(r.result.exit_code, 0) << r.result.err;
  const json& f = r.report["fidelity"];
  EXPECT_EQ(f["calibrated"], true);
  EXPECT_EQ(f["engine"], "test-engine");
  EXPECT_EQ(f["hardware_profile"], kProfiled);
  EXPECT_EQ(f["points"], 12);
  EXPECT_DOUBLE_EQ(f["median_abs_error"].get<double>(), 0.062);
  EXPECT_DOUBLE_EQ(f["max_abs_error"].get<double>(), 0.19);
  EXPECT_DOUBLE_EQ(f["by_metric"]["ttft"]["median_abs_error"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(f["in_sample"]["median_abs_error"].get<double>(), 0.03);
  EXPECT_DOUBLE_EQ(f["hardware"]["median_abs_error"].get<double>(), 0.031);
  EXPECT_NE(f["error_kind"].get<std::string>().find("out-of-sample"), std::string::npos);
  EXPECT_EQ(f["summary"], kProfiledSummary);
  EXPECT_TRUE(f["out_of_range"].empty()) << f.dump(1);
  EXPECT_TRUE(contains(r.result.out, std::string("  fidelity   ") + kProfiledSummary + "\n"))
      << r.result.out;
  // The page says it in words (the out-of-sample median and max first, in-sample labelled),
  // with the summary line beside it.
  EXPECT_TRUE(contains(r.html,
                       "<div class=\"fidelity\">Predicted with the test-engine engine profile on "
                       "the " +
                           std::string(kProfiled) +
                           " hardware profile. On measurements it was not fitted to, its "
                           "predictions were off by 6.2% (median), at most 19.0%"))
      << r.html.substr(0, 3000);
  EXPECT_TRUE(contains(r.html, "(In-sample fit: 3.0% median, not the error to expect.)"));
  EXPECT_TRUE(contains(r.html, std::string("<span class=\"muted\">") + kProfiledSummary));
  // A run outside the calibrated range says so, and by how much.
  json big = scenario_with_engine(kProfiled, true);
  big["model"] = "llama-2-70b";
  big["deployment"] = {{"parallel_strategy", {{"tensor_parallel", 8}}}};
  big["topology"]["nodes"] = 1;
  const SimRun b = simulate("fidelity_range", big);
  ASSERT_EQ(b.result.exit_code, 0) << b.result.err;
  const json& o = b.report["fidelity"]["out_of_range"];
  ASSERT_EQ(o.size(), 2u) << b.report["fidelity"].dump(1);
  EXPECT_NE(o[0].get<std::string>().find("8.6x the largest calibrated"), std::string::npos) << o;
  EXPECT_NE(o[1].get<std::string>().find("TP 8 is beyond the calibrated TP 1-1"),
            std::string::npos);
}

TEST(Fidelity, PlanGivesTheFidelityOfEachGpuType) {
  const std::string dir = temp_dir("fidelity_plan");
  write_profile(dir);
  std::ofstream(dir + "/base.json") << scenario_with_engine(kProfiled, true).dump(1);
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
  EXPECT_DOUBLE_EQ(f[kProfiled]["max_abs_error"].get<double>(), 0.19);
  EXPECT_EQ(f[kPlain]["calibrated"], false);
  EXPECT_EQ(f[kPlain]["summary"], kUnmeasured);
  // Every candidate's GPU type has an entry.
  ASSERT_FALSE(p["ranked"].empty()) << p.dump(1);
  for (const auto& e : p["ranked"]) EXPECT_TRUE(f.contains(e["config"]["gpu"])) << e.dump();

  EXPECT_TRUE(contains(r.out, std::string("  fidelity   ") + kProfiled + ": " + kProfiledSummary))
      << r.out;
  EXPECT_TRUE(contains(r.out, std::string("  fidelity   ") + kPlain + ": " + kUnmeasured)) << r.out;
  EXPECT_TRUE(contains(r.out, "model err")) << r.out;
  const std::string html = read_file(dir + "/out/report.html");
  // One statement per GPU type, in words, the summary line beside it.
  EXPECT_TRUE(contains(html, std::string("<div class=\"fidelity\"><b>") + kProfiled +
                                 ":</b> Predicted with the test-engine engine profile on the " +
                                 kProfiled +
                                 " hardware profile. On measurements it was not fitted "
                                 "to, its predictions were off by 6.2% (median)"));
  EXPECT_TRUE(contains(html, std::string("<span class=\"muted\">") + kProfiledSummary));
  EXPECT_TRUE(contains(html, std::string("<div class=\"fidelity uncalibrated\"><b>") + kPlain +
                                 ":</b> Predicted with the test-engine engine profile, "
                                 "<b>uncalibrated</b>"));
  EXPECT_TRUE(contains(html, std::string("<span class=\"muted\">") + kUnmeasured));
  EXPECT_TRUE(contains(html, "model error (median, max)"));
}

}  // namespace
}  // namespace prima::testing
