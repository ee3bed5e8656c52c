// Issue 4's incident scenarios (scenarios/incidents/<name>.json and <name>_mitigated.json):
// each symptom is reproduced and its fix measurably removes it. Assertions are on the
// reports the users read (report.json, timeline.csv).
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

using nlohmann::json;

struct IncidentRun {
  json report;
  std::string dir;
};

IncidentRun simulate(const std::string& name, const std::string& sets = "") {
  IncidentRun r;
  r.dir = temp_dir("incident_" + name);
  auto res = run_prima("simulate " + source_path("scenarios/incidents/" + name + ".json") + " " +
                       sets + " --out " + r.dir + " -q");
  EXPECT_EQ(res.exit_code, 0) << res.err;
  if (res.exit_code == 0) r.report = read_json(r.dir + "/report.json");
  return r;
}

void expect_conservation(const json& r) {
  const auto& q = r["requests"];
  EXPECT_EQ(q["submitted"].get<long>(),
            q["completed"].get<long>() + q["rejected"].get<long>() + q["failed"].get<long>());
}

double e2e_p99(const json& r) {
  return r["latency_s"]["e2e"]["p99"].get<double>();
}

TEST(Incidents, GpuSaturationLatencyFixedByALargerBatch) {
  IncidentRun sym = simulate("gpu_saturation_latency");
  IncidentRun fix = simulate("gpu_saturation_latency_mitigated");
  ASSERT_FALSE(sym.report.empty());
  ASSERT_FALSE(fix.report.empty());
  expect_conservation(sym.report);
  expect_conservation(fix.report);
  // Symptom: GPUs saturated and latency jumps; the fix keeps p99 well inside the 20 s SLO.
  EXPECT_GT(e2e_p99(sym.report), 3 * e2e_p99(fix.report));
  EXPECT_GT(e2e_p99(sym.report), 20.0);
  EXPECT_LT(e2e_p99(fix.report), 20.0);
  EXPECT_GT(sym.report["gpus"]["utilization_mean"].get<double>(), 0.9);
}

TEST(Incidents, LongContextOomFixedByAContextLimit) {
  IncidentRun sym = simulate("long_context_oom");
  IncidentRun fix = simulate("long_context_oom_mitigated");
  ASSERT_FALSE(sym.report.empty());
  ASSERT_FALSE(fix.report.empty());
  expect_conservation(sym.report);
  expect_conservation(fix.report);
  // Symptom: long documents exhaust the KV cache and everyone waits behind them.
  EXPECT_DOUBLE_EQ(sym.report["kv_cache"]["peak_usage"].get<double>(), 1.0);
  EXPECT_GT(e2e_p99(sym.report), 5 * e2e_p99(fix.report));
  // Fix: documents over the limit are refused at admission, with the reason.
  EXPECT_GT(fix.report["requests"]["rejected"].get<long>(), 0);
  EXPECT_NE(read_file(fix.dir + "/requests.csv").find("exceed the context limit 16384"),
            std::string::npos);
  EXPECT_LT(fix.report["kv_cache"]["peak_usage"].get<double>(), 0.5);
}

}  // namespace
}  // namespace prima::testing
