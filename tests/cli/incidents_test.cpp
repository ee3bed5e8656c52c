// The incident scenarios (scenarios/incidents/<name>.json and <name>_mitigated.json):
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

// Runs <name>.json (the symptom) and <name>_mitigated.json (the fix); both must run and
// conserve requests. ok() is false when either failed to run.
struct IncidentPair {
  IncidentRun sym, fix;
  bool ok() const { return !sym.report.empty() && !fix.report.empty(); }
};

IncidentPair simulate_pair(const std::string& name) {
  IncidentPair p{simulate(name), simulate(name + "_mitigated")};
  if (p.ok()) {
    expect_conservation(p.sym.report);
    expect_conservation(p.fix.report);
  }
  return p;
}

TEST(Incidents, GpuSaturationLatencyFixedByALargerBatch) {
  IncidentPair p = simulate_pair("gpu_saturation_latency");
  ASSERT_TRUE(p.ok());
  const IncidentRun& sym = p.sym;
  const IncidentRun& fix = p.fix;
  // Symptom: GPUs saturated and latency jumps; the fix keeps p99 well inside the 20 s SLO.
  EXPECT_GT(e2e_p99(sym.report), 3 * e2e_p99(fix.report));
  EXPECT_GT(e2e_p99(sym.report), 20.0);
  EXPECT_LT(e2e_p99(fix.report), 20.0);
  EXPECT_GT(sym.report["gpus"]["utilization_mean"].get<double>(), 0.9);
}

TEST(Incidents, LongContextOomFixedByAContextLimit) {
  IncidentPair p = simulate_pair("long_context_oom");
  ASSERT_TRUE(p.ok());
  const IncidentRun& sym = p.sym;
  const IncidentRun& fix = p.fix;
  // Symptom: long documents exhaust the KV cache and everyone waits behind them.
  EXPECT_GT(sym.report["kv_cache"]["peak_usage"].get<double>(), 0.99);  // within a few blocks
  EXPECT_GT(e2e_p99(sym.report), 5 * e2e_p99(fix.report));
  // Fix: documents over the limit are refused at admission, with the reason.
  EXPECT_GT(fix.report["requests"]["rejected"].get<long>(), 0);
  EXPECT_NE(read_file(fix.dir + "/requests.csv").find("exceed the context limit 16384"),
            std::string::npos);
  EXPECT_LT(fix.report["kv_cache"]["peak_usage"].get<double>(), 0.5);
}

}  // namespace
}  // namespace prima::testing

namespace prima::testing {
namespace {

const json& incident(const json& report) {
  return report["incidents"][0];
}
double inside(const json& r) {
  return incident(r)["e2e_p99_inside_s"].get<double>();
}
double outside(const json& r) {
  return incident(r)["e2e_p99_outside_s"].get<double>();
}

// Seed 000: windowed p99 E2E inside the drift window >= 2x outside; the fix removes most of
// the gap.
TEST(Incidents, ThermalClockDriftDoublesP99InsideTheWindow) {
  IncidentPair p = simulate_pair("thermal_clock_drift");
  ASSERT_TRUE(p.ok());
  const IncidentRun& sym = p.sym;
  const IncidentRun& fix = p.fix;
  EXPECT_EQ(incident(sym.report)["fault"], "CRAC trip");
  EXPECT_GE(inside(sym.report), 2 * outside(sym.report));
  const double gap = inside(sym.report) - outside(sym.report);
  const double fixed_gap = inside(fix.report) - outside(fix.report);
  EXPECT_LT(fixed_gap, 0.25 * gap);
  // The timeline shows the cause: temperatures, retransmissions, the fault's window.
  const std::string tl = read_file(sym.dir + "/timeline.csv");
  EXPECT_NE(tl.find("temp_c_node0"), std::string::npos);
  EXPECT_NE(tl.find("retransmit_rate"), std::string::npos);
  EXPECT_NE(tl.find(",CRAC trip\n"), std::string::npos);
}

// A node dies mid-run and comes back: with failover nothing is lost and the p99 of the
// requests in flight during the outage is reported; without it, requests fail.
TEST(Incidents, NodeFailureWithFailoverLosesNothing) {
  IncidentPair p = simulate_pair("node_failure");
  ASSERT_TRUE(p.ok());
  const IncidentRun& sym = p.sym;
  const IncidentRun& fix = p.fix;
  EXPECT_GT(sym.report["requests"]["failed"].get<long>(), 0);
  EXPECT_EQ(fix.report["requests"]["failed"].get<long>(), 0);
  EXPECT_EQ(fix.report["requests"]["completed"], fix.report["requests"]["submitted"]);
  const json& f = fix.report["failover"];
  EXPECT_EQ(f["replica_failures"].get<long>(), 1);
  EXPECT_EQ(f["replica_recoveries"].get<long>(), 1);
  EXPECT_GT(f["reroutes"].get<long>(), 0);
  EXPECT_EQ(f["retries_exhausted"].get<long>(), 0);
  EXPECT_GT(incident(fix.report)["requests_inside"].get<long>(), 0);
  EXPECT_GT(inside(fix.report), 0.0);
  EXPECT_EQ(incident(fix.report)["failed_inside"].get<long>(), 0);
  // The outage is labelled in the timeline.
  const std::string tl = read_file(fix.dir + "/timeline.csv");
  EXPECT_NE(tl.find(",node1 PSU\n"), std::string::npos);
}

TEST(Incidents, RdmaRegistrationFailureFixedByDisablingTheMemtypeCache) {
  IncidentPair p = simulate_pair("rdma_registration_failure");
  ASSERT_TRUE(p.ok());
  const IncidentRun& sym = p.sym;
  const IncidentRun& fix = p.fix;
  EXPECT_GT(sym.report["failover"]["step_failures"].get<long>(), 0);
  EXPECT_GT(sym.report["failover"]["replica_failures"].get<long>(), 0);
  EXPECT_EQ(fix.report["failover"]["step_failures"].get<long>(), 0);
  EXPECT_EQ(fix.report["requests"]["failed"].get<long>(), 0);
  EXPECT_GT(e2e_p99(sym.report), 3 * e2e_p99(fix.report));
}

TEST(Incidents, LoadImbalanceFixedByLoadMigration) {
  IncidentPair p = simulate_pair("load_imbalance");
  ASSERT_TRUE(p.ok());
  const IncidentRun& sym = p.sym;
  const IncidentRun& fix = p.fix;
  EXPECT_EQ(sym.report["failover"]["migrations"].get<long>(), 0);
  EXPECT_GT(fix.report["failover"]["migrations"].get<long>(), 0);
  EXPECT_GT(e2e_p99(sym.report), 1.8 * e2e_p99(fix.report));
}

// Seed 001: with NCCL_TIMEOUT=5 an 8 s hiccup aborts the collective, the worker restarts and
// the cluster runs on half capacity; with NCCL_TIMEOUT=600 the hiccup is waited out.
TEST(Incidents, NcclTimeoutFixedByALongerTimeout) {
  IncidentPair p = simulate_pair("nccl_timeout");
  ASSERT_TRUE(p.ok());
  const IncidentRun& sym = p.sym;
  const IncidentRun& fix = p.fix;
  EXPECT_GT(sym.report["failover"]["step_failures"].get<long>(), 0);
  EXPECT_EQ(sym.report["failover"]["replica_failures"].get<long>(), 1);
  EXPECT_EQ(fix.report["failover"]["step_failures"].get<long>(), 0);
  EXPECT_EQ(fix.report["failover"]["replica_failures"].get<long>(), 0);
  EXPECT_GT(e2e_p99(sym.report), 1.5 * e2e_p99(fix.report));
}

TEST(Incidents, NvlinkSaturationFixedByLessCrossGpuTraffic) {
  IncidentPair p = simulate_pair("nvlink_saturation");
  ASSERT_TRUE(p.ok());
  const IncidentRun& sym = p.sym;
  const IncidentRun& fix = p.fix;
  EXPECT_GT(inside(sym.report), 1.6 * outside(sym.report));
  EXPECT_LT(inside(fix.report), 1.25 * outside(fix.report));
  EXPECT_LT(inside(fix.report), 0.6 * inside(sym.report));
}

// The summary an on-call engineer reads first names each fault window and the failover.
TEST(Incidents, SummaryNamesTheFaultWindows) {
  auto r = run_prima("simulate " + source_path("scenarios/incidents/node_failure_mitigated.json") +
                     " --no-files -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("incident   node1 PSU (node_failure, node 1) 60-120 s: E2E p99"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("0 failed\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("failover   1 failed steps, 1 replicas out / 1 back"), std::string::npos)
      << r.out;
  // The verdict comes before the figures, as in report.html.
  EXPECT_NE(r.out.find("  verdict    SLO met: 100.0% of requests within every bound (target "
                       "99.0%)\n  requests   "),
            std::string::npos)
      << r.out;
  // Without health checks the SLO is missed, and the line says so.
  auto sym = run_prima("simulate " + source_path("scenarios/incidents/node_failure.json") +
                       " --no-files -q");
  ASSERT_EQ(sym.exit_code, 0) << sym.err;
  EXPECT_NE(sym.out.find("  verdict    SLO missed: "), std::string::npos) << sym.out;
}

// Every incident scenario comes as a pair, and every file is a valid scenario.
TEST(Incidents, EveryIncidentHasItsMitigation) {
  for (const char* name :
       {"thermal_clock_drift", "nvlink_saturation", "rdma_registration_failure", "load_imbalance",
        "node_failure", "nccl_timeout", "long_context_oom", "gpu_saturation_latency"}) {
    for (const std::string suffix : {"", "_mitigated"}) {
      auto r = run_prima(
          "validate " + source_path(std::string("scenarios/incidents/") + name + suffix + ".json"));
      EXPECT_EQ(r.exit_code, 0) << name << suffix << ": " << r.err;
    }
  }
}

}  // namespace
}  // namespace prima::testing
