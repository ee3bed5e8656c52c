#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "engine/workload/internal.h"
#include "tests/engine/workload/workload_test_util.h"

namespace prima::workload {
namespace {

using testing::gaps;
using testing::moments;
using testing::run_open;
using testing::spec_from;

constexpr double kInf = std::numeric_limits<double>::infinity();

const char* kPoisson = R"({"arrival": {"type": "poisson", "rate_rps": 50},
  "prompt_tokens": 100, "output_tokens": 10, "max_requests": 20000})";

TEST(ArrivalPoisson, MeanRateAndExponentialGaps) {
  auto rs = run_open(spec_from(kPoisson), 7, kInf);
  ASSERT_EQ(rs.size(), 20000u);
  auto m = moments(gaps(rs));
  EXPECT_NEAR(m.mean, 1.0 / 50, 0.03 / 50);  // ~4 standard errors
  EXPECT_NEAR(m.cv(), 1.0, 0.03);
  // Exponential: P(gap > mean) = e^-1.
  int over = 0;
  for (double g : gaps(rs)) over += g > 1.0 / 50;
  EXPECT_NEAR(over / 19999.0, std::exp(-1.0), 0.015);
  EXPECT_NEAR(rs.size() / rs.back().arrival_s, 50, 1.5);
}

TEST(ArrivalPoisson, StopsAtDuration) {
  auto spec = spec_from(R"({"arrival": {"type": "poisson", "rate_rps": 100},
    "prompt_tokens": 1, "output_tokens": 1})");
  auto rs = run_open(spec, 1, 10.0);
  ASSERT_FALSE(rs.empty());
  EXPECT_LT(rs.back().arrival_s, 10.0);
  EXPECT_NEAR(static_cast<double>(rs.size()), 1000, 120);
}

TEST(ArrivalGamma, CoefficientOfVariation) {
  for (double cv : {0.5, 1.0, 2.0, 4.0}) {
    auto spec =
        spec_from(R"({"arrival": {"type": "gamma", "rate_rps": 20, "cv": )" + std::to_string(cv) +
                  R"(}, "prompt_tokens": 1, "output_tokens": 1, "max_requests": 20000})");
    auto m = moments(gaps(run_open(spec, 3, kInf)));
    EXPECT_NEAR(m.mean, 0.05, 0.05 * 0.03 * cv) << "cv " << cv;
    EXPECT_NEAR(m.cv(), cv, 0.06 * cv) << "cv " << cv;
  }
}

TEST(ArrivalConstant, EvenSpacingFromZero) {
  auto spec = spec_from(R"({"arrival": {"type": "constant", "rate_rps": 4},
    "prompt_tokens": 1, "output_tokens": 1})");
  auto rs = run_open(spec, 1, 10.0);
  ASSERT_EQ(rs.size(), 40u);
  for (std::size_t i = 0; i < rs.size(); ++i) EXPECT_DOUBLE_EQ(rs[i].arrival_s, i * 0.25);
}

TEST(ArrivalProfile, FollowsPiecewiseLinearShape) {
  auto spec = spec_from(R"({"arrival": {"type": "poisson",
    "rate_profile": [[0, 10], [100, 100], [200, 10]]},
    "prompt_tokens": 1, "output_tokens": 1})");
  auto rs = run_open(spec, 11, 200.0);
  double bins[4] = {0, 0, 0, 0};
  for (const auto& r : rs) bins[static_cast<int>(r.arrival_s / 50)] += 1;
  // Integrals of the rate over each 50 s bin: 1625, 3875, 3875, 1625.
  EXPECT_NEAR(bins[0], 1625, 160);
  EXPECT_NEAR(bins[1], 3875, 250);
  EXPECT_NEAR(bins[2], 3875, 250);
  EXPECT_NEAR(bins[3], 1625, 160);
}

TEST(ArrivalProfile, RateFunctionAndPeriodicWrap) {
  std::vector<RatePoint> p = {{0, 0}, {5, 20}};
  EXPECT_DOUBLE_EQ(profile_rate(p, 0, -1), 0);
  EXPECT_DOUBLE_EQ(profile_rate(p, 0, 2.5), 10);
  EXPECT_DOUBLE_EQ(profile_rate(p, 0, 50), 20);    // holds the last rate
  EXPECT_DOUBLE_EQ(profile_rate(p, 10, 7.5), 10);  // wraps back towards the first point
  EXPECT_DOUBLE_EQ(profile_rate(p, 10, 12.5), 10);
  EXPECT_DOUBLE_EQ(profile_rate(p, 10, 25), 20);
}

TEST(ArrivalProfile, PeriodicRepeats) {
  auto spec = spec_from(R"({"arrival": {"type": "poisson",
    "rate_profile": [[0, 0], [5, 40]], "period_s": 10},
    "prompt_tokens": 1, "output_tokens": 1})");
  auto rs = run_open(spec, 5, 1000.0);
  // Phase [4, 6) carries rate ~32..40..32, phase [9, 10) + [0, 1) ~ 0..4..0.
  int peak = 0, trough = 0;
  for (const auto& r : rs) {
    double ph = std::fmod(r.arrival_s, 10);
    if (ph >= 4 && ph < 6) ++peak;
    if (ph >= 9 || ph < 1) ++trough;
  }
  EXPECT_NEAR(peak, 100 * 72, 400);  // 100 periods x integral 72
  EXPECT_NEAR(trough, 100 * 8, 120);
  EXPECT_NEAR(static_cast<double>(rs.size()), 100 * 200, 700);
}

TEST(ArrivalProfile, EndsAfterTrailingZeroRate) {
  auto spec = spec_from(R"({"arrival": {"type": "poisson",
    "rate_profile": [[0, 10], [10, 0]]}, "prompt_tokens": 1, "output_tokens": 1})");
  auto rs = run_open(spec, 5, kInf);  // terminates with no duration limit
  EXPECT_NEAR(static_cast<double>(rs.size()), 50, 25);
  EXPECT_LT(rs.back().arrival_s, 10);
}

TEST(WorkloadDeterminism, SameSeedSameSequenceDifferentSeedDiffers) {
  const char* text = R"({"arrival": {"type": "gamma", "rate_rps": 10, "cv": 2},
    "prompt_tokens": {"type": "lognormal", "median": 500, "sigma": 1},
    "output_tokens": {"type": "uniform", "min": 1, "max": 400},
    "priority_mix": {"high": 0.3, "normal": 0.7}, "max_requests": 500})";
  auto a = run_open(spec_from(text), 99, kInf);
  auto b = run_open(spec_from(text), 99, kInf);
  auto c = run_open(spec_from(text), 100, kInf);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
    EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens);
    EXPECT_EQ(a[i].output_tokens, b[i].output_tokens);
    EXPECT_EQ(a[i].priority, b[i].priority);
  }
  int same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += a[i].arrival_s == c[i].arrival_s;
  EXPECT_LT(same, 5);
}

TEST(WorkloadDeterminism, LengthsDoNotShiftArrivals) {
  auto a = run_open(spec_from(R"({"arrival": {"type": "poisson", "rate_rps": 10},
    "prompt_tokens": 100, "output_tokens": 10, "max_requests": 300})"),
                    5, kInf);
  auto b = run_open(spec_from(R"({"arrival": {"type": "poisson", "rate_rps": 10},
    "prompt_tokens": {"type": "normal", "mean": 300, "stddev": 50},
    "output_tokens": {"type": "empirical", "values": [1, 2, 3]},
    "priority_mix": {"high": 0.5, "low": 0.5}, "max_requests": 300})"),
                    5, kInf);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].arrival_s, b[i].arrival_s);
}

// Golden values: the generators and draws are portable, so these hold on every machine.
TEST(WorkloadDeterminism, GoldenSequence) {
  auto rs = run_open(spec_from(R"({"arrival": {"type": "poisson", "rate_rps": 1},
    "prompt_tokens": {"type": "uniform", "min": 1, "max": 1000}, "output_tokens": 8,
    "max_requests": 3})"),
                     42, kInf);
  ASSERT_EQ(rs.size(), 3u);
  EXPECT_EQ(rs[0].arrival_s, 1.2791369251118268);
  EXPECT_EQ(rs[1].arrival_s, 2.3589221615976417);
  EXPECT_EQ(rs[2].arrival_s, 3.8570374785177588);
  EXPECT_EQ(rs[0].prompt_tokens, 881);
  EXPECT_EQ(rs[1].prompt_tokens, 586);
  EXPECT_EQ(rs[2].prompt_tokens, 371);
  Rng g;  // the standard fixes mt19937_64's 10000th output for the default seed
  g.discard(9999);
  EXPECT_EQ(g(), 9981545732273789042ULL);
}

TEST(ArrivalDriver, MaxRequestsAndStartOffset) {
  auto d = make_workload(spec_from(R"({"arrival": {"type": "constant", "rate_rps": 2},
    "prompt_tokens": 5, "output_tokens": 6, "max_requests": 3})"),
                         1, kInf);
  ASSERT_TRUE(d.ok());
  prima::testing::ManualRuntime rt;
  rt.advance_to(100);
  std::vector<RequestSpec> out;
  ASSERT_TRUE((*d)->start(&rt, [&](const RequestSpec& r) { out.push_back(r); }).ok());
  EXPECT_FALSE((*d)->done());
  rt.run_until_idle();
  ASSERT_EQ(out.size(), 3u);
  EXPECT_DOUBLE_EQ(out[0].arrival_s, 100);
  EXPECT_DOUBLE_EQ(out[2].arrival_s, 101);
  EXPECT_EQ(out[0].prompt_tokens, 5);
  EXPECT_EQ(out[0].output_tokens, 6);
  EXPECT_TRUE((*d)->done());
  EXPECT_FALSE((*d)->start(&rt, [](const RequestSpec&) {}).ok());
}

TEST(ArrivalDriver, DestroyingCancelsTimer) {
  prima::testing::ManualRuntime rt;
  {
    auto d = make_workload(spec_from(kPoisson), 1, kInf);
    ASSERT_TRUE(d.ok());
    ASSERT_TRUE((*d)->start(&rt, [](const RequestSpec&) {}).ok());
    EXPECT_EQ(rt.pending(), 1u);
  }
  EXPECT_EQ(rt.pending(), 0u);
}

TEST(ArrivalDriver, RejectsBadDuration) {
  EXPECT_FALSE(make_workload(spec_from(kPoisson), 1, 0).ok());
  EXPECT_FALSE(make_workload(spec_from(kPoisson), 1, std::nan("")).ok());
}

}  // namespace
}  // namespace prima::workload
