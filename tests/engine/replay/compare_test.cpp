// Measured vs simulated figures (engine/replay/compare.h) against hand computation: which
// requests count, ITL from gaps or TPOT, signed relative errors, the fit objective, the
// fidelity figures and the JSON shape.
#include "engine/replay/compare.h"

#include <gtest/gtest.h>

#include <cmath>

namespace prima::replay {
namespace {

MeasuredRequest measured(double ttft, double tpot, double e2e, int out = 5, bool ok = true) {
  MeasuredRequest r;
  r.ttft_s = ttft;
  r.tpot_s = tpot;
  r.e2e_s = e2e;
  r.output_tokens = out;
  r.ok = ok;
  return r;
}

SimulatedRequest simulated(double ttft, double tpot, double e2e, int out = 5, bool ok = true) {
  SimulatedRequest r;
  r.ttft_s = ttft;
  r.tpot_s = tpot;
  r.e2e_s = e2e;
  r.queue_s = 0;
  r.output_tokens = out;
  r.ok = ok;
  return r;
}

TEST(Compare, CountsCompletedRequestsOnly) {
  std::vector<MeasuredRequest> m = {measured(0.1, 0.01, 0.2), measured(0.3, 0.03, 0.4),
                                    measured(9, 9, 9, 5, false)};
  Samples s = measured_samples(m);
  EXPECT_EQ(s.of(Metric::kTtft).size(), 2u);
  EXPECT_TRUE(s.of(Metric::kItl).empty());  // none measured
  EXPECT_TRUE(s.of(Metric::kQueue).empty());
}

TEST(Compare, SimulatedItlIsTheGapsElseTpotPerGap) {
  SimulatedRequest a = simulated(0.1, 0.02, 0.18, 5);
  a.itl_s = {0.01, 0.03, 0.02, 0.02};
  SimulatedRequest b = simulated(0.1, 0.05, 0.25, 4);  // no gaps recorded: 3 x TPOT
  Samples s = simulated_samples({a, b});
  const auto& itl = s.of(Metric::kItl);
  ASSERT_EQ(itl.size(), 7u);
  EXPECT_DOUBLE_EQ(itl[4], 0.05);
  EXPECT_DOUBLE_EQ(itl[6], 0.05);
}

TEST(Compare, SignedRelativeErrorsByHand) {
  // Measured TTFT 0.1, 0.2, 0.3, 0.4 (mean 0.25, p50 0.25, p90 0.37, p99 0.397);
  // simulated exactly 1.2 x each: every error is +20%.
  std::vector<MeasuredRequest> m;
  std::vector<SimulatedRequest> s;
  for (double t : {0.1, 0.2, 0.3, 0.4}) {
    m.push_back(measured(t, t / 10, 2 * t));
    s.push_back(simulated(1.2 * t, 0.8 * t / 10, 2 * t));
  }
  Comparison c = compare(measured_samples(m), simulated_samples(s));
  const auto& ttft = c.at(Metric::kTtft);
  EXPECT_EQ(ttft.measured_count, 4u);
  EXPECT_NEAR(ttft.at(Stat::kMean).measured, 0.25, 1e-12);
  EXPECT_NEAR(ttft.at(Stat::kP90).measured, 0.37, 1e-12);
  EXPECT_NEAR(ttft.at(Stat::kP99).simulated, 1.2 * 0.397, 1e-12);
  for (int st = 0; st < kNumStats; ++st) {
    EXPECT_NEAR(c.at(Metric::kTtft).stats[st].error, 0.2, 1e-12);
    EXPECT_NEAR(c.at(Metric::kTpot).stats[st].error, -0.2, 1e-12);
    EXPECT_NEAR(c.at(Metric::kE2e).stats[st].error, 0, 1e-12);
  }
  // ITL: not measured, so no error; queue: measured nothing either.
  EXPECT_TRUE(std::isnan(c.at(Metric::kItl).at(Stat::kMean).measured));
  EXPECT_TRUE(std::isnan(c.at(Metric::kItl).at(Stat::kMean).error));
  // Objective: TTFT and TPOT terms at mean and p90, E2E 0: (2 ln(1.2)^2 + 2 ln(0.8)^2) / 6.
  const double want = (2 * std::pow(std::log(1.2), 2) + 2 * std::pow(std::log(0.8), 2)) / 6;
  EXPECT_EQ(fit_objective_terms(c), 6);
  EXPECT_NEAR(fit_objective(c), want, 1e-12);
  // Fidelity: 12 figures with errors (TTFT, TPOT, E2E x 4): |0.2| x 8 and 0 x 4.
  perf::Fidelity f = comparison_fidelity(c, "test data");
  EXPECT_TRUE(f.calibrated);
  EXPECT_EQ(f.points, 12);
  EXPECT_NEAR(f.median_abs_error, 0.2, 1e-12);
  EXPECT_NEAR(f.max_abs_error, 0.2, 1e-12);
  EXPECT_EQ(f.calibration_data, "test data");
}

TEST(Compare, NothingToCompareGivesNoObjective) {
  Comparison c = compare(Samples{}, Samples{});
  EXPECT_EQ(fit_objective_terms(c), 0);
  EXPECT_TRUE(std::isnan(fit_objective(c)));
  EXPECT_EQ(comparison_fidelity(c, "").points, 0);
}

TEST(Compare, AJointObjectiveIsTheMeanOfTheRunsAndFidelityPoolsTheirFigures) {
  // Run a: TTFT 20% long, the rest exact; run b: everything exact, with two requests.
  const Comparison a = compare(measured_samples({measured(0.1, 0.01, 0.2)}),
                               simulated_samples({simulated(0.12, 0.01, 0.2)}));
  const Comparison b =
      compare(measured_samples({measured(0.1, 0.01, 0.2), measured(0.3, 0.02, 0.5)}),
              simulated_samples({simulated(0.1, 0.01, 0.2), simulated(0.3, 0.02, 0.5)}));
  EXPECT_NEAR(fit_objective(a), 2 * std::pow(std::log(1.2), 2) / 6, 1e-12);
  EXPECT_NEAR(fit_objective(b), 0, 1e-12);
  // Each run counts the same, whatever its size.
  EXPECT_NEAR(joint_fit_objective({a, b}), fit_objective(a) / 2, 1e-12);
  EXPECT_DOUBLE_EQ(joint_fit_objective({a}), fit_objective(a));
  EXPECT_TRUE(std::isnan(joint_fit_objective({})));
  EXPECT_TRUE(std::isnan(joint_fit_objective({a, compare(Samples{}, Samples{})})));
  // Fidelity over both: 12 figures each (TTFT, TPOT, E2E x 4), 4 of them 20% off.
  const perf::Fidelity f = comparison_fidelity(std::vector<Comparison>{a, b}, "two runs");
  EXPECT_EQ(f.points, 24);
  EXPECT_NEAR(f.max_abs_error, 0.2, 1e-12);
  EXPECT_NEAR(f.median_abs_error, 0, 1e-12);
  EXPECT_EQ(f.calibration_data, "two runs");
  EXPECT_EQ(comparison_fidelity(a, "").points, 12);
}

TEST(Compare, JsonHasEveryMetricAndFigureWithNullsForMissing) {
  std::vector<MeasuredRequest> m = {measured(0.1, 0.01, 0.2)};
  std::vector<SimulatedRequest> s = {simulated(0.1, 0.01, 0.2)};
  auto j = comparison_to_json(compare(measured_samples(m), simulated_samples(s)));
  for (const char* metric : {"ttft", "tpot", "itl", "e2e", "queue"}) {
    ASSERT_TRUE(j.contains(metric)) << metric;
    for (const char* st : {"mean", "p50", "p90", "p99"}) {
      ASSERT_TRUE(j[metric].contains(st)) << metric << "." << st;
      for (const char* k : {"measured", "simulated", "error"})
        EXPECT_TRUE(j[metric][st].contains(k)) << metric << "." << st << "." << k;
    }
  }
  EXPECT_DOUBLE_EQ(j["ttft"]["mean"]["error"].get<double>(), 0);
  EXPECT_TRUE(j["itl"]["mean"]["measured"].is_null());
  EXPECT_EQ(j["ttft"]["count"]["measured"], 1);
  const std::string table = comparison_table(compare(measured_samples(m), simulated_samples(s)));
  EXPECT_NE(table.find("ttft"), std::string::npos);
  EXPECT_NE(table.find("+0.0%"), std::string::npos);
}

}  // namespace
}  // namespace prima::replay
