// Nelder–Mead (engine/perf/fit.h) on functions whose minimum is known: an unbounded
// quadratic, Rosenbrock's valley, a minimum outside the bounds (it must stop on the bound), a
// log-ratio objective like the replay fit's, the iteration cap, and bad arguments.
#include "engine/perf/fit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

namespace prima::perf {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(NelderMead, FindsTheMinimumOfAQuadratic) {
  auto f = [](const std::vector<double>& x) {
    return (x[0] - 3) * (x[0] - 3) + 10 * (x[1] + 2) * (x[1] + 2) + 1;
  };
  NelderMeadOptions o;
  o.max_iterations = 500;
  auto r = nelder_mead(f, {0, 0}, {FitBound{}, FitBound{}}, o);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->converged);
  EXPECT_NEAR(r->x[0], 3, 1e-3);
  EXPECT_NEAR(r->x[1], -2, 1e-3);
  EXPECT_NEAR(r->f, 1, 1e-6);
}

TEST(NelderMead, FollowsRosenbrocksValley) {
  auto f = [](const std::vector<double>& x) {
    return 100 * std::pow(x[1] - x[0] * x[0], 2) + std::pow(1 - x[0], 2);
  };
  NelderMeadOptions o;
  o.max_iterations = 2000;
  o.f_tolerance = 1e-14;
  o.x_tolerance = 1e-7;
  auto r = nelder_mead(f, {-1.2, 1}, {FitBound{}, FitBound{}}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->converged);
  EXPECT_NEAR(r->x[0], 1, 1e-3);
  EXPECT_NEAR(r->x[1], 1, 2e-3);
}

TEST(NelderMead, StopsOnABoundWhenTheMinimumIsBeyondIt) {
  // Minimum at (5, -1); x0 is held to [0, 2] and x1 to [0, inf).
  std::vector<std::vector<double>> seen;
  auto f = [&](const std::vector<double>& x) {
    seen.push_back(x);
    return (x[0] - 5) * (x[0] - 5) + (x[1] + 1) * (x[1] + 1);
  };
  NelderMeadOptions o;
  o.max_iterations = 400;
  auto r = nelder_mead(f, {1, 1}, {FitBound{0, 2}, FitBound{0, kInf}}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->x[0], 2, 1e-3);
  EXPECT_NEAR(r->x[1], 0, 1e-2);
  for (const auto& x : seen) {  // never evaluated outside the bounds
    EXPECT_GE(x[0], 0);
    EXPECT_LE(x[0], 2);
    EXPECT_GE(x[1], 0);
  }
}

TEST(NelderMead, RecoversScaledParametersFromLogRatios) {
  // The replay fit's shape: "measurements" from a model with known parameters (a latency
  // share and an overhead of milliseconds), an objective of squared log ratios, bounds of
  // the parameters' kinds, starting from the defaults.
  auto model = [](double share, double overhead_s, double n) {
    return overhead_s + 0.02 / share + 1e-4 * n / share;
  };
  const double truth_share = 0.5, truth_overhead = 4e-3;
  std::vector<double> ns = {1, 10, 100, 1000};
  auto f = [&](const std::vector<double>& x) {
    double s = 0;
    for (double n : ns) {
      const double l = std::log(model(x[0], x[1], n) / model(truth_share, truth_overhead, n));
      s += l * l;
    }
    return s / static_cast<double>(ns.size());
  };
  NelderMeadOptions o;
  o.max_iterations = 300;
  o.initial_step = {0.1, 1e-3};
  auto r = nelder_mead(f, {0.85, 1.5e-3}, {FitBound{0.01, 1}, FitBound{0, kInf}}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->x[0], truth_share, truth_share * 1e-3);
  EXPECT_NEAR(r->x[1], truth_overhead, truth_overhead * 1e-2);
}

TEST(NelderMead, HonoursTheIterationCapAndReportsEachIteration) {
  int reported = 0, last = 0;
  double last_best = kInf;
  NelderMeadOptions o;
  o.max_iterations = 7;
  o.on_iteration = [&](const NelderMeadIteration& it) {
    ++reported;
    EXPECT_EQ(it.iteration, last + 1);
    EXPECT_LE(it.best_f, last_best);  // the best never gets worse
    last = it.iteration;
    last_best = it.best_f;
  };
  auto f = [](const std::vector<double>& x) { return std::pow(x[0] - 100, 2); };
  auto r = nelder_mead(f, {0}, {FitBound{}}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->iterations, 7);
  EXPECT_EQ(reported, 7);
  EXPECT_FALSE(r->converged);
  EXPECT_GE(r->evaluations, 2 + 7);
}

// A value in [0, 1) fixed per cell of a grid: deterministic jumps at every cell border, like a
// simulation whose requests change step when a parameter moves a little.
double cell_noise(double x, double y, double cell) {
  std::uint64_t z = static_cast<std::uint64_t>(static_cast<std::int64_t>(std::floor(x / cell))) *
                        0x9E3779B97F4A7C15ull ^
                    static_cast<std::uint64_t>(static_cast<std::int64_t>(std::floor(y / cell)));
  z += 0x9E3779B97F4A7C15ull;  // SplitMix64's finalizer
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) / 9007199254740992.0;
}

TEST(NelderMead, RestartsHelpOnARoughValley) {
  // A narrow valley (only x0 + x1 is pinned tightly) with small jumps: the simplex shrinks
  // onto a step before the minimum at (1, 1) and crawls; restarts from its best point walk on.
  // (They change the path, so a single start may end a little higher.)
  auto f = [](const std::vector<double>& x) {
    const double s = x[0] + x[1] - 2, d = x[0] - x[1];
    return s * s + 1e-2 * d * d + 1e-3 * cell_noise(x[0], x[1], 1e-3);
  };
  int better = 0;
  for (double x0 : {3.0, -2.0, 5.0, 0.0, 8.0, -4.0}) {
    NelderMeadOptions once;
    once.max_iterations = 300;
    NelderMeadOptions again = once;
    again.restarts = 20;
    auto plain = nelder_mead(f, {x0, -1.5}, {FitBound{}, FitBound{}}, once);
    auto restarted = nelder_mead(f, {x0, -1.5}, {FitBound{}, FitBound{}}, again);
    ASSERT_TRUE(plain.ok());
    ASSERT_TRUE(restarted.ok());
    EXPECT_EQ(plain->restarts, 0);
    EXPECT_GE(restarted->restarts, 1) << x0;
    EXPECT_LE(restarted->restarts, 20);
    EXPECT_LE(restarted->f, 1.1 * plain->f) << x0;
    if (restarted->f < 0.9 * plain->f) ++better;
  }
  EXPECT_GE(better, 4);  // 5 of the 6 starts end at least 10% lower
}

TEST(NelderMead, ARestartThatFindsNothingBetterEnds) {
  auto f = [](const std::vector<double>& x) { return (x[0] - 1) * (x[0] - 1); };
  NelderMeadOptions o;
  o.max_iterations = 1000;
  o.restarts = 50;
  auto r = nelder_mead(f, {4}, {FitBound{}}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->converged);
  EXPECT_LT(r->restarts, 50);  // stopped once a restart came back to the same point
  EXPECT_LT(r->iterations, 1000);
  EXPECT_NEAR(r->x[0], 1, 1e-4);
}

TEST(NelderMead, TreatsNonFiniteValuesAsWorst) {
  // Undefined (NaN) left of 1: the search must still find the minimum at 2.
  auto f = [](const std::vector<double>& x) {
    return x[0] < 1 ? std::nan("") : (x[0] - 2) * (x[0] - 2);
  };
  NelderMeadOptions o;
  o.max_iterations = 200;
  auto r = nelder_mead(f, {1.5}, {FitBound{}}, o);
  ASSERT_TRUE(r.ok());
  EXPECT_NEAR(r->x[0], 2, 1e-3);
}

TEST(NelderMead, RefusesBadArguments) {
  auto f = [](const std::vector<double>& x) { return x[0]; };
  EXPECT_FALSE(nelder_mead(f, {}, {}).ok());
  EXPECT_FALSE(nelder_mead(f, {1}, {}).ok());
  EXPECT_FALSE(nelder_mead(f, {1}, {FitBound{2, 1}}).ok());
  auto outside = nelder_mead(f, {3}, {FitBound{0, 2}});
  ASSERT_FALSE(outside.ok());
  EXPECT_NE(outside.status().message().find("outside its bounds"), std::string::npos);
  NelderMeadOptions zero;
  zero.initial_step = {0};
  EXPECT_FALSE(nelder_mead(f, {1}, {FitBound{}}, zero).ok());
}

}  // namespace
}  // namespace prima::perf
