#include <gtest/gtest.h>

#include <algorithm>

#include "engine/workload/lengths.h"
#include "tests/engine/workload/workload_test_util.h"

namespace prima::workload {
namespace {

using testing::parse_error;

LengthSpec length_from(const std::string& text) {
  config::Json j = config::Json::parse(R"({"len": )" + text + "}");
  config::JsonReader r(j, "t.json");
  LengthSpec s = parse_length(r, "len", LengthSpec::fixed(1));
  r.finish();
  EXPECT_TRUE(s.validate("len").ok());
  return s;
}

std::vector<double> draws(const LengthSpec& s, int n = 20000, std::uint64_t seed = 1) {
  LengthSampler sampler(s);
  Rng g(seed);
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(sampler.draw(g));
  return v;
}

TEST(LengthDist, FixedNumberAndObject) {
  auto v = draws(length_from("128"), 10);
  for (double x : v) EXPECT_EQ(x, 128);
  v = draws(length_from(R"({"type": "fixed", "value": 7, "max": 5})"), 10);
  for (double x : v) EXPECT_EQ(x, 5);
}

TEST(LengthDist, UniformRangeAndMean) {
  auto v = draws(length_from(R"({"type": "uniform", "min": 10, "max": 20})"));
  EXPECT_EQ(*std::min_element(v.begin(), v.end()), 10);
  EXPECT_EQ(*std::max_element(v.begin(), v.end()), 20);
  EXPECT_NEAR(testing::moments(v).mean, 15, 0.1);
}

TEST(LengthDist, LognormalMeanAndMedian) {
  auto s = length_from(R"({"type": "lognormal", "mean": 1000, "sigma": 0.8})");
  EXPECT_NEAR(LengthSampler(s).mean(), 1000, 1e-9);
  EXPECT_NEAR(testing::moments(draws(s)).mean, 1000, 25);
  auto v = draws(length_from(R"({"type": "lognormal", "median": 300, "sigma": 1})"));
  std::sort(v.begin(), v.end());
  EXPECT_NEAR(v[v.size() / 2], 300, 10);
}

TEST(LengthDist, NormalMeanStddevAndClamps) {
  auto m = testing::moments(draws(length_from(R"({"type": "normal", "mean": 500,
    "stddev": 50})")));
  EXPECT_NEAR(m.mean, 500, 1.5);
  EXPECT_NEAR(m.stddev, 50, 1.5);
  auto v = draws(length_from(R"({"type": "normal", "mean": 0, "stddev": 100, "max": 50})"));
  EXPECT_EQ(*std::min_element(v.begin(), v.end()), 1);  // default min clamp
  EXPECT_EQ(*std::max_element(v.begin(), v.end()), 50);
  int at_min = std::count(v.begin(), v.end(), 1.0);
  EXPECT_GT(at_min, 9000);  // about half the mass is clamped up to 1
}

TEST(LengthDist, EmpiricalWeights) {
  auto v = draws(length_from(R"({"type": "empirical", "values": [10, 20, 30],
    "weights": [1, 0, 3]})"));
  int n10 = std::count(v.begin(), v.end(), 10.0), n20 = std::count(v.begin(), v.end(), 20.0);
  EXPECT_EQ(n20, 0);
  EXPECT_NEAR(n10 / 20000.0, 0.25, 0.015);
  EXPECT_NEAR(LengthSampler(length_from(R"({"type": "empirical", "values": [10, 30]})")).mean(), 20,
              1e-12);
}

TEST(LengthDist, SequenceTakesItsValuesInRequestOrder) {
  LengthSampler s(length_from(R"({"type": "sequence", "values": [145, 130, 973]})"));
  Rng g(1);
  std::vector<int> got;
  for (std::uint64_t i = 0; i < 7; ++i) got.push_back(s.draw(g, i));
  EXPECT_EQ(got, (std::vector<int>{145, 130, 973, 145, 130, 973, 145}));  // then it repeats
  EXPECT_NEAR(s.mean(), (145 + 130 + 973) / 3.0, 1e-12);
  // The clamps apply as to every kind.
  LengthSampler c(length_from(R"({"type": "sequence", "values": [5, 50], "max": 20})"));
  EXPECT_EQ(c.draw(g, 1), 20);
}

TEST(LengthDist, BadSpecsNameThePath) {
  const std::string head = R"({"arrival": {"type": "poisson", "rate_rps": 1}, "output_tokens": 1,
    "prompt_tokens": )";
  EXPECT_NE(parse_error(head + R"({"type": "zipf"}})")
                .find("/workload/prompt_tokens/type: "
                      "expected one of fixed"),
            std::string::npos);
  EXPECT_NE(parse_error(head + R"({"type": "lognormal", "mean": 5}})").find("sigma"),
            std::string::npos);
  EXPECT_NE(parse_error(head + R"({"type": "lognormal", "mean": 5, "median": 4, "sigma": 1}})")
                .find("exactly one of"),
            std::string::npos);
  EXPECT_NE(parse_error(head + R"({"type": "uniform", "min": 5, "max": 4}})").find("max"),
            std::string::npos);
  EXPECT_NE(parse_error(head + R"({"type": "uniform", "min": 5}})").find("/max: missing"),
            std::string::npos);
  EXPECT_NE(parse_error(head + R"({"type": "empirical", "values": [1, 2], "weights": [1]}})")
                .find("/weights: expected 2 weights"),
            std::string::npos);
  EXPECT_NE(parse_error(head + R"({"type": "sequence", "values": []}})")
                .find("/workload/prompt_tokens/values: expected a non-empty array"),
            std::string::npos);
  EXPECT_NE(parse_error(head + R"({"type": "sequence", "values": [1, 2.5]}})")
                .find("/workload/prompt_tokens/values/1: expected a token count"),
            std::string::npos);
  EXPECT_NE(parse_error(head + R"({"type": "sequence", "values": [1, 2], "weights": [1, 1]}})")
                .find("/workload/prompt_tokens/weights: a sequence takes its values in order"),
            std::string::npos);
  EXPECT_NE(parse_error(head + R"({"type": "fixed", "value": 3, "mean": 3}})")
                .find("/workload/prompt_tokens/mean: unknown field"),
            std::string::npos);
  EXPECT_NE(parse_error(head + R"(-5})").find("expected a token count"), std::string::npos);
  EXPECT_NE(parse_error(head + R"("long"})").find("/workload/prompt_tokens: expected a token"),
            std::string::npos);
}

}  // namespace
}  // namespace prima::workload
