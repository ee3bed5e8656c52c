// Bench workloads: rates and counts over long runs within tolerance, determinism with a seed,
// option validation, closed loop for concurrency, and trace replay.
#include "loadgen/schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>

namespace prima::loadgen {
namespace {

std::vector<workload::RequestSpec> plan(const ScheduleOptions& o, std::uint64_t seed) {
  auto w = workload_from_options(o);
  EXPECT_TRUE(w.ok()) << w.status().message();
  auto r = plan_open_loop(*w, seed, o.duration_s);
  EXPECT_TRUE(r.ok()) << r.status().message();
  return *r;
}

TEST(Schedule, PoissonRateOverALongRun) {
  ScheduleOptions o;
  o.request_rate = 50;
  o.duration_s = 2000;
  auto v = plan(o, 7);
  // 100,000 expected; the count is Poisson: sd ~316, allow 1%.
  EXPECT_NEAR(static_cast<double>(v.size()), 100000.0, 1000.0);
  double sum = 0, sum2 = 0;
  for (std::size_t i = 1; i < v.size(); ++i) {
    double g = v[i].arrival_s - v[i - 1].arrival_s;
    ASSERT_GE(g, 0);
    sum += g;
    sum2 += g * g;
  }
  const double n = static_cast<double>(v.size() - 1), mean = sum / n;
  const double cv = std::sqrt(sum2 / n - mean * mean) / mean;
  EXPECT_NEAR(mean, 0.02, 0.0004);
  EXPECT_NEAR(cv, 1.0, 0.02);  // exponential gaps
  EXPECT_LT(v.back().arrival_s, 2000);
}

TEST(Schedule, ConstantRateIsExact) {
  ScheduleOptions o;
  o.request_rate = 4;
  o.arrival = "constant";
  o.num_prompts = 9;
  auto v = plan(o, 1);
  ASSERT_EQ(v.size(), 9u);
  for (std::size_t i = 0; i < v.size(); ++i) EXPECT_DOUBLE_EQ(v[i].arrival_s, 0.25 * i);
}

TEST(Schedule, BurstinessGivesGammaGapsWithTheRightCv) {
  ScheduleOptions o;
  o.request_rate = 10;
  o.burstiness = 0.25;  // cv = 1 / sqrt(0.25) = 2
  o.num_prompts = 50000;
  auto w = workload_from_options(o);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->arrival.type, workload::ArrivalType::kGamma);
  auto v = plan(o, 3);
  ASSERT_EQ(v.size(), 50000u);
  double sum = 0, sum2 = 0;
  for (std::size_t i = 1; i < v.size(); ++i) {
    double g = v[i].arrival_s - v[i - 1].arrival_s;
    sum += g;
    sum2 += g * g;
  }
  const double n = static_cast<double>(v.size() - 1), mean = sum / n;
  EXPECT_NEAR(mean, 0.1, 0.004);
  EXPECT_NEAR(std::sqrt(sum2 / n - mean * mean) / mean, 2.0, 0.1);
}

TEST(Schedule, SameSeedSameRequestsOtherSeedOthers) {
  ScheduleOptions o;
  o.request_rate = 20;
  o.num_prompts = 500;
  o.input_len = 200;
  o.output_len = 50;
  o.range_ratio = 0.5;
  auto a = plan(o, 42), b = plan(o, 42), c = plan(o, 43);
  ASSERT_EQ(a.size(), 500u);
  bool differs = false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
    EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens);
    EXPECT_EQ(a[i].output_tokens, b[i].output_tokens);
    EXPECT_GE(a[i].prompt_tokens, 100);
    EXPECT_LE(a[i].prompt_tokens, 300);
    EXPECT_GE(a[i].output_tokens, 25);
    EXPECT_LE(a[i].output_tokens, 75);
    differs = differs || a[i].arrival_s != c[i].arrival_s;
  }
  EXPECT_TRUE(differs);
}

TEST(Schedule, LengthsDoNotDependOnTheRate) {
  // Separate streams per draw: a different rate moves arrivals, never lengths.
  ScheduleOptions o;
  o.num_prompts = 100;
  o.range_ratio = 0.9;
  o.request_rate = 5;
  auto a = plan(o, 9);
  o.request_rate = 50;
  auto b = plan(o, 9);
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens);
}

TEST(Schedule, ConcurrencyAndInfiniteRateAreClosedLoop) {
  ScheduleOptions o;
  o.concurrency = 8;
  o.num_prompts = 100;
  auto w = workload_from_options(o);
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->arrival.type, workload::ArrivalType::kClosedLoop);
  EXPECT_EQ(w->arrival.users, 8);
  EXPECT_EQ(w->arrival.think_time_s, 0);
  EXPECT_FALSE(plan_open_loop(*w, 1, kInf).ok());  // no fixed arrivals
  ScheduleOptions inf;  // rate inf: everything at once, capped by max_concurrency
  inf.num_prompts = 1000;
  inf.max_concurrency = 32;
  auto wi = workload_from_options(inf);
  ASSERT_TRUE(wi.ok());
  EXPECT_EQ(wi->arrival.users, 32);
  inf.max_concurrency = 0;
  EXPECT_EQ(workload_from_options(inf)->arrival.users, 1000);
}

TEST(Schedule, BadOptionsAreClearErrors) {
  auto msg = [](ScheduleOptions o) {
    auto w = workload_from_options(o);
    EXPECT_FALSE(w.ok());
    return w.ok() ? std::string() : w.status().message();
  };
  ScheduleOptions o;
  o.num_prompts = 10;
  ScheduleOptions a = o;
  a.arrival = "weibull";
  EXPECT_NE(msg(a).find("--arrival"), std::string::npos);
  ScheduleOptions b = o;
  b.request_rate = 5;
  b.concurrency = 4;
  EXPECT_NE(msg(b).find("exclude"), std::string::npos);
  ScheduleOptions c = o;
  c.range_ratio = 1.5;
  EXPECT_NE(msg(c).find("--random-range-ratio"), std::string::npos);
  ScheduleOptions d;  // nothing says when to stop
  EXPECT_NE(msg(d).find("--num-prompts"), std::string::npos);
  ScheduleOptions e = o;
  e.request_rate = -1;
  EXPECT_NE(msg(e).find("--request-rate"), std::string::npos);
  ScheduleOptions f = o;
  f.input_len = 0;
  EXPECT_NE(msg(f).find("--random-input-len"), std::string::npos);
}

TEST(Schedule, TraceReplaysArrivalsAndLengths) {
  const std::string path = ::testing::TempDir() + "/bench_trace.csv";
  {
    std::ofstream f(path);
    f << "TIMESTAMP,ContextTokens,GeneratedTokens\n"
         "2023-11-16 18:00:00.0,100,10\n"
         "2023-11-16 18:00:00.5,200,20\n"
         "2023-11-16 18:00:02.0,300,30\n";
  }
  ScheduleOptions o;
  o.trace_path = path;
  o.time_scale = 0.5;
  auto w = workload_from_options(o);
  ASSERT_TRUE(w.ok()) << w.status().message();
  auto v = plan_open_loop(*w, 1, kInf);
  ASSERT_TRUE(v.ok()) << v.status().message();
  ASSERT_EQ(v->size(), 3u);
  EXPECT_DOUBLE_EQ((*v)[1].arrival_s, 0.25);
  EXPECT_DOUBLE_EQ((*v)[2].arrival_s, 1.0);
  EXPECT_EQ((*v)[2].prompt_tokens, 300);
  EXPECT_EQ((*v)[2].output_tokens, 30);
  std::remove(path.c_str());
}

TEST(Schedule, BadTraceFileNamesTheLine) {
  const std::string path = ::testing::TempDir() + "/bench_bad_trace.csv";
  {
    std::ofstream f(path);
    f << "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:00:00,100,abc\n";
  }
  ScheduleOptions o;
  o.trace_path = path;
  auto w = workload_from_options(o);
  ASSERT_TRUE(w.ok());
  auto v = plan_open_loop(*w, 1, kInf);
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find(":2"), std::string::npos) << v.status().message();
  EXPECT_NE(v.status().message().find("GeneratedTokens"), std::string::npos);
  std::remove(path.c_str());
  o.trace_path = path + ".missing";
  EXPECT_FALSE(plan_open_loop(*workload_from_options(o), 1, kInf).ok());
}

TEST(Schedule, DescribeNamesArrivalAndLengths) {
  ScheduleOptions o;
  o.request_rate = 10;
  o.num_prompts = 200;
  auto d = describe_workload(*workload_from_options(o), kInf);
  EXPECT_EQ(d, "poisson 10 req/s, 200 requests, input 1024, output 128");
}

}  // namespace
}  // namespace prima::loadgen
