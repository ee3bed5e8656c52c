#include <gtest/gtest.h>

#include <limits>

#include "tests/engine/workload/workload_test_util.h"

namespace prima::workload {
namespace {

using testing::parse_error;
using testing::run_open;
using testing::spec_from;

constexpr double kInf = std::numeric_limits<double>::infinity();

void expect_error(const std::string& text, const std::string& part) {
  std::string e = parse_error(text);
  EXPECT_NE(e.find(part), std::string::npos) << "error: " << e << "\nexpected: " << part;
}

TEST(WorkloadParse, FullSpec) {
  auto s = spec_from(R"({"arrival": {"type": "closed_loop", "users": 8,
    "think_time_s": {"type": "exponential", "mean": "500ms"}, "ramp_up_s": 4},
    "prompt_tokens": {"type": "lognormal", "median": 300, "sigma": 1, "max": 4096},
    "output_tokens": 64, "priority_mix": {"high": 0.25, "normal": 0.5, "low": 0.25},
    "sla": {"high": "200ms", "normal": "2s"}, "max_requests": 1000,
    "shared_prefix": {"groups": 4, "tokens": 128, "fraction": 0.5}})");
  EXPECT_EQ(s.arrival.type, ArrivalType::kClosedLoop);
  EXPECT_EQ(s.arrival.users, 8);
  EXPECT_FALSE(s.arrival.think_fixed);
  EXPECT_DOUBLE_EQ(s.arrival.think_time_s, 0.5);
  EXPECT_DOUBLE_EQ(s.arrival.ramp_up_s, 4);
  EXPECT_EQ(s.prompt_tokens.max, 4096);
  EXPECT_DOUBLE_EQ(s.sla_s[0], 0.2);
  EXPECT_DOUBLE_EQ(s.sla_s[1], 2);
  EXPECT_DOUBLE_EQ(s.sla_s[2], 0);
  EXPECT_EQ(s.max_requests, 1000u);
  EXPECT_EQ(s.prefix.groups, 4);
  EXPECT_TRUE(s.validate().ok());
}

TEST(WorkloadParse, TracePathResolvedAgainstBaseDir) {
  auto s = spec_from(R"({"arrival": {"type": "trace", "format": "azure_csv",
    "path": "azure_small.csv"}})");
  EXPECT_EQ(s.arrival.path, testing::data_dir() + "/azure_small.csv");
}

TEST(WorkloadParse, ErrorsNamePathAndValidChoices) {
  expect_error(R"({"arrival": {"type": "bursty"}, "prompt_tokens": 1, "output_tokens": 1})",
               "test.json: /workload/arrival/type: expected one of poisson, gamma, constant, "
               "closed_loop, trace");
  expect_error(R"({"arrival": {"type": "poisson", "rate_rps": 1, "burst": 2},
    "prompt_tokens": 1, "output_tokens": 1})",
               "/workload/arrival/burst: unknown field");
  expect_error(R"({"arrival": {"type": "poisson", "rate_rps": 1}, "prompt_tokens": 1,
    "output_tokens": 1, "prompts": 3})",
               "/workload/prompts: unknown field");
  expect_error(R"({"arrival": {"type": "poisson", "rate_rps": 1}, "prompt_tokens": 1})",
               "/workload/output_tokens: missing required field");
  expect_error(R"({"arrival": {"type": "poisson", "rate_rps": 0}, "prompt_tokens": 1,
    "output_tokens": 1})",
               "/workload/arrival/rate_rps: expected a positive number");
  expect_error(R"({"arrival": {"type": "poisson", "rate_rps": 1, "rate_profile": [[0, 1]]},
    "prompt_tokens": 1, "output_tokens": 1})",
               "not both");
  expect_error(R"({"arrival": {"type": "poisson", "rate_profile": [[0, 1], [0, 2]]},
    "prompt_tokens": 1, "output_tokens": 1})",
               "/workload/arrival/rate_profile/1: times must increase");
  expect_error(R"({"arrival": {"type": "poisson", "rate_profile": [[0, 1], [10, 2]],
    "period_s": 5}, "prompt_tokens": 1, "output_tokens": 1})",
               "/workload/arrival/period_s: expected a period longer");
  expect_error(R"({"arrival": {"type": "gamma", "rate_rps": 1}, "prompt_tokens": 1,
    "output_tokens": 1})",
               "/workload/arrival/cv: missing required field");
  expect_error(R"({"arrival": {"type": "closed_loop", "users": 0}, "prompt_tokens": 1,
    "output_tokens": 1})",
               "/workload/arrival/users: expected a positive integer");
  expect_error(R"({"arrival": {"type": "closed_loop", "users": 2,
    "think_time_s": {"type": "pareto"}}, "prompt_tokens": 1, "output_tokens": 1})",
               "/workload/arrival/think_time_s/type: expected one of fixed, exponential");
  expect_error(R"({"arrival": {"type": "trace", "format": "csv", "path": "x"}})",
               "/workload/arrival/format: expected one of azure_csv, jsonl");
  expect_error(R"({"arrival": {"type": "trace", "format": "jsonl", "path": "small.jsonl"},
    "prompt_tokens": 5})",
               "/workload/prompt_tokens: a trace carries its own lengths");
  expect_error(R"({"arrival": {"type": "trace", "format": "jsonl", "path": "small.jsonl",
    "time_scale": 2, "rate_rps": 3}})",
               "not both");
}

TEST(WorkloadPriority, MixValidation) {
  const std::string head = R"({"arrival": {"type": "poisson", "rate_rps": 1},
    "prompt_tokens": 1, "output_tokens": 1, )";
  expect_error(head + R"("priority_mix": {"high": 0.5, "normal": 0.4}})", "summing to 1");
  expect_error(head + R"("priority_mix": {"high": 0.5, "urgent": 0.5}})",
               "/workload/priority_mix/urgent: unknown field");
  expect_error(head + R"("priority_mix": {"high": 1.5}})",
               "/workload/priority_mix/high: expected a number in [0, 1]");
  expect_error(head + R"("sla": {"vip": "1s"}})", "/workload/sla/vip: unknown field");
  expect_error(head + R"("sla": {"high": "soon"}})", "/workload/sla/high: expected a duration");
}

TEST(WorkloadPriority, MixFractionsAndSlas) {
  auto rs = run_open(spec_from(R"({"arrival": {"type": "poisson", "rate_rps": 100},
    "prompt_tokens": 1, "output_tokens": 1, "max_requests": 20000,
    "priority_mix": {"high": 0.2, "normal": 0.5, "low": 0.3},
    "sla": {"high": "200ms", "normal": "2s", "low": "1min"}})"),
                     4, kInf);
  int n[3] = {0, 0, 0};
  for (const auto& r : rs) {
    ++n[static_cast<int>(r.priority)];
    double want = r.priority == Priority::kHigh ? 0.2 : r.priority == Priority::kNormal ? 2 : 60;
    EXPECT_DOUBLE_EQ(r.sla_s, want);
  }
  EXPECT_NEAR(n[0] / 20000.0, 0.2, 0.012);
  EXPECT_NEAR(n[1] / 20000.0, 0.5, 0.015);
  EXPECT_NEAR(n[2] / 20000.0, 0.3, 0.015);
}

TEST(WorkloadPrefix, GroupsAndFraction) {
  auto rs = run_open(spec_from(R"({"arrival": {"type": "poisson", "rate_rps": 100},
    "prompt_tokens": {"type": "uniform", "min": 50, "max": 500}, "output_tokens": 1,
    "max_requests": 10000, "shared_prefix": {"groups": 5, "tokens": 100, "fraction": 0.6}})"),
                     4, kInf);
  int shared = 0;
  for (const auto& r : rs) {
    if (r.prefix_group == 0) {
      EXPECT_EQ(r.prefix_tokens, 0);
      continue;
    }
    ++shared;
    EXPECT_LE(r.prefix_group, 5u);
    EXPECT_EQ(r.prefix_tokens, std::min(100, r.prompt_tokens));
  }
  EXPECT_NEAR(shared / 10000.0, 0.6, 0.02);
}

}  // namespace
}  // namespace prima::workload
