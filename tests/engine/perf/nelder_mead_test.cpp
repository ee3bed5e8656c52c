// Nelder-Mead finds known minima inside its bounds.
#include "engine/perf/nelder_mead.h"

#include <gtest/gtest.h>

#include <cmath>

namespace prima::perf {
namespace {

TEST(NelderMead, FindsTheRosenbrockMinimum) {
  auto rosen = [](const std::vector<double>& x) {
    return 100 * (x[1] - x[0] * x[0]) * (x[1] - x[0] * x[0]) + (1 - x[0]) * (1 - x[0]);
  };
  const FitResult r = nelder_mead(rosen, {-1.2, 1.0}, {{-3, 3}, {-3, 3}}, 4000, 1e-16);
  EXPECT_NEAR(r.x[0], 1.0, 1e-3);
  EXPECT_NEAR(r.x[1], 1.0, 2e-3);
  EXPECT_LT(r.value, 1e-6);
}

TEST(NelderMead, StaysInsideItsBounds) {
  // The unconstrained minimum (x = 5) is outside: the answer approaches the bound 2.
  auto f = [](const std::vector<double>& x) { return (x[0] - 5) * (x[0] - 5); };
  int outside = 0;
  auto counted = [&](const std::vector<double>& x) {
    if (x[0] < 0 || x[0] > 2) ++outside;
    return f(x);
  };
  const FitResult r = nelder_mead(counted, {1.0}, {{0, 2}}, 500);
  EXPECT_EQ(outside, 0);
  EXPECT_NEAR(r.x[0], 2.0, 1e-3);
}

TEST(NelderMead, RecoversParametersOfAModel) {
  // t(B) = a + B / b sampled at five sizes; fit a and b back from the samples.
  const double a = 20e-6, b = 300e9;
  std::vector<double> sizes{1e6, 1.6e7, 6.4e7, 2.56e8, 1e9};
  auto err = [&](const std::vector<double>& x) {
    double s = 0;
    for (double n : sizes) {
      const double r = std::log((x[0] + n / x[1]) / (a + n / b));
      s += r * r;
    }
    return s;
  };
  const FitResult r = nelder_mead(err, {1e-6, 100e9}, {{0, 1e-3}, {1e9, 1e12}}, 4000, 1e-20);
  EXPECT_NEAR(r.x[0], a, a * 0.01);
  EXPECT_NEAR(r.x[1], b, b * 0.01);
}

}  // namespace
}  // namespace prima::perf
