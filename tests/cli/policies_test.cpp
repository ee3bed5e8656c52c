// The cluster policies proved in simulation: each policy scenario (scenarios/policies/*.json)
// run with and without its policy; the tests assert the direction and size of the effect.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

using nlohmann::json;

struct PolicyRun {
  json report;
  std::string dir;
};

PolicyRun simulate(const std::string& scenario, const std::string& sets, const std::string& name) {
  PolicyRun r;
  r.dir = temp_dir(name);
  auto res =
      run_prima("simulate " + source_path(scenario) + " " + sets + " --out " + r.dir + " -q");
  EXPECT_EQ(res.exit_code, 0) << res.err;
  if (res.exit_code == 0) r.report = read_json(r.dir + "/report.json");
  return r;
}

// p99 TTFT of completed requests whose prompt is at most `max_prompt` tokens (requests.csv).
double short_ttft_p99(const std::string& dir, int max_prompt) {
  std::istringstream in(read_file(dir + "/requests.csv"));
  std::string line;
  std::getline(in, line);  // header
  std::vector<double> v;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string x;
    while (std::getline(ss, x, ',')) f.push_back(x);
    // id,priority,replica,outcome,prompt_tokens,output_tokens,preemptions,arrival_s,
    // first_scheduled_s,first_token_s,finish_s,ttft_s,...
    if (f.size() < 12 || f[3] != "completed" || std::stoi(f[4]) > max_prompt) continue;
    v.push_back(std::stod(f[11]));
  }
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(0.99 * (v.size() - 1))];
}

double class_ttft_p99(const json& r, const char* cls) {
  return r["by_priority"][cls]["latency_s"]["ttft"]["p99"].get<double>();
}

TEST(Policies, PriorityOverloadKeepsHighClassWithinItsSla) {
  const char* s = "scenarios/policies/priority_overload.json";
  PolicyRun on = simulate(s, "", "prio_on");
  PolicyRun off = simulate(s, "--set scheduler.priority_scheduling=false", "prio_off");
  ASSERT_FALSE(on.report.empty());
  ASSERT_FALSE(off.report.empty());
  const double sla = 0.5;
  // With priorities: the high class meets its SLA at p99; the normal class absorbs the overload.
  EXPECT_LE(class_ttft_p99(on.report, "high"), sla);
  EXPECT_GE(on.report["by_priority"]["high"]["slo_attainment"].get<double>(), 0.99);
  EXPECT_GT(class_ttft_p99(on.report, "normal"), 10 * sla);
  // Without: both degrade.
  EXPECT_GT(class_ttft_p99(off.report, "high"), 10 * sla);
  EXPECT_GT(class_ttft_p99(off.report, "normal"), 10 * sla);
  for (const PolicyRun* r : {&on, &off}) {
    const auto& q = r->report["requests"];
    EXPECT_EQ(q["submitted"],
              q["completed"].get<long>() + q["rejected"].get<long>() + q["failed"].get<long>());
  }
}

TEST(Policies, LongPromptQueueHalvesShortRequestTail) {
  const char* s = "scenarios/policies/long_prompt_queue.json";
  PolicyRun on = simulate(s, "", "long_on");
  PolicyRun off = simulate(s, "--set scheduler.long_prompt_queue=false", "long_off");
  ASSERT_FALSE(on.report.empty());
  ASSERT_FALSE(off.report.empty());
  const double with_queue = short_ttft_p99(on.dir, 512);
  const double without = short_ttft_p99(off.dir, 512);
  EXPECT_GT(with_queue, 0);
  EXPECT_LE(with_queue, 0.5 * without) << "short p99 TTFT " << with_queue << " vs " << without;
  EXPECT_EQ(on.report["requests"]["completed"], on.report["requests"]["submitted"]);
}

TEST(Policies, DisaggregatedLowersTpotTail) {
  const char* s = "scenarios/policies/disaggregated.json";
  PolicyRun dis = simulate(s, "", "pd_on");
  PolicyRun col = simulate(s, "--set disaggregation=null", "pd_off");
  ASSERT_FALSE(dis.report.empty());
  ASSERT_FALSE(col.report.empty());
  const double tpot_dis = dis.report["latency_s"]["tpot"]["p99"].get<double>();
  const double tpot_col = col.report["latency_s"]["tpot"]["p99"].get<double>();
  EXPECT_LT(tpot_dis, tpot_col) << "disaggregated " << tpot_dis << " vs colocated " << tpot_col;
  EXPECT_GT(dis.report["disaggregation"]["handoffs"].get<long>(), 0);
  EXPECT_GT(dis.report["disaggregation"]["handoff_gb"].get<double>(), 0);
  EXPECT_FALSE(col.report.contains("disaggregation"));
  EXPECT_EQ(dis.report["gpus"]["count"], col.report["gpus"]["count"]);  // same GPUs
  EXPECT_EQ(dis.report["requests"]["completed"], dis.report["requests"]["submitted"]);
}

TEST(Policies, ResponseCacheRaisesThroughputUnderOverload) {
  const char* s = "scenarios/policies/response_cache.json";
  PolicyRun on = simulate(s, "", "rc_on");
  PolicyRun off = simulate(s, "--set response_cache.enabled=false", "rc_off");
  ASSERT_FALSE(on.report.empty());
  ASSERT_FALSE(off.report.empty());
  const double thr_on = on.report["throughput"]["requests_per_s"].get<double>();
  const double thr_off = off.report["throughput"]["requests_per_s"].get<double>();
  EXPECT_GT(thr_on, 1.5 * thr_off) << thr_on << " vs " << thr_off;
  EXPECT_GT(on.report["response_cache"]["hit_rate"].get<double>(), 0.5);
  EXPECT_GT(on.report["response_cache"]["hits"].get<long>(), 0);
  EXPECT_EQ(on.report["requests"]["failed"], 0);
}

TEST(Policies, AutoscalerFollowsADiurnalLoad) {
  PolicyRun r = simulate("scenarios/policies/autoscale_diurnal.json", "", "diurnal");
  ASSERT_FALSE(r.report.empty());
  const auto& q = r.report["requests"];
  // No request dropped.
  EXPECT_EQ(q["completed"], q["submitted"]);
  EXPECT_EQ(q["failed"], 0);
  EXPECT_EQ(q["rejected"], 0);
  const auto& a = r.report["autoscaler"];
  EXPECT_GT(a["scale_ups"].get<int>(), 0);
  EXPECT_GT(a["scale_downs"].get<int>(), 0);
  // Replicas follow the load: timeline rows t_s, arrivals, ..., running(6), waiting(7),
  // replicas_up(8).
  std::istringstream in(read_file(r.dir + "/timeline.csv"));
  std::string line;
  std::getline(in, line);
  std::vector<double> arrivals, replicas, occupancy;
  while (std::getline(in, line)) {
    std::vector<double> f;
    std::stringstream ss(line);
    std::string x;
    while (std::getline(ss, x, ',')) f.push_back(std::stod(x));
    if (f[0] <= 60 || f[0] > 600) continue;  // after the first minute, within the day
    arrivals.push_back(f[1]);
    replicas.push_back(f[8]);
    occupancy.push_back((f[6] + f[7]) / (f[8] * 64));  // max_num_seqs = 64
  }
  ASSERT_GT(arrivals.size(), 400u);
  auto mean = [](const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += x;
    return s / v.size();
  };
  const double ma = mean(arrivals), mr = mean(replicas);
  double cov = 0, va = 0, vr = 0;
  for (std::size_t i = 0; i < arrivals.size(); ++i) {
    cov += (arrivals[i] - ma) * (replicas[i] - mr);
    va += (arrivals[i] - ma) * (arrivals[i] - ma);
    vr += (replicas[i] - mr) * (replicas[i] - mr);
  }
  EXPECT_GT(cov / std::sqrt(va * vr), 0.6) << "replica count should track the arrival rate";
  // The load per replica stays near the 80% target.
  EXPECT_GT(mean(occupancy), 0.5);
  EXPECT_LT(mean(occupancy), 1.0);
}

}  // namespace
}  // namespace prima::testing
