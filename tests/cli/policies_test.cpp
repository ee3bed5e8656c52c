// Issue 3's proofs in simulation: each policy scenario (scenarios/policies/*.json) run with
// and without its policy; the tests assert the direction and size of the effect.
#include <gtest/gtest.h>

#include <algorithm>
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
  auto res = run_prima("simulate " + source_path(scenario) + " " + sets + " --out " + r.dir + " -q");
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
    EXPECT_EQ(q["submitted"], q["completed"].get<long>() + q["rejected"].get<long>() +
                                  q["failed"].get<long>());
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

}  // namespace
}  // namespace prima::testing
