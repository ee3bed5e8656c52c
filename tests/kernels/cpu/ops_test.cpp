// Tests for kernels/cpu/ops.h against double-precision formulas on seeded random data.
#include "kernels/cpu/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace prima::kernels {
namespace {

std::vector<float> randn(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

TEST(Ops, RmsNorm) {
  for (std::size_t n : {1u, 7u, 576u, 1536u}) {
    const auto x = randn(n, 1, 3.0f), w = randn(n, 2);
    std::vector<float> out(n);
    rms_norm(x.data(), w.data(), std::int64_t(n), 1e-5f, out.data());
    double ss = 0;
    for (float v : x) ss += double(v) * v;
    const double scale = 1.0 / std::sqrt(ss / double(n) + 1e-5);
    for (std::size_t i = 0; i < n; ++i)
      ASSERT_NEAR(out[i], x[i] * scale * w[i], 1e-5 * std::fabs(x[i] * scale * w[i]) + 1e-7);
    // In place.
    auto y = x;
    rms_norm(y.data(), w.data(), std::int64_t(n), 1e-5f, y.data());
    EXPECT_EQ(y, out);
  }
}

TEST(Ops, RopeRotatesAdjacentPairs) {
  const int heads = 3, head_dim = 64;
  for (std::int64_t pos : {0, 1, 17, 4000}) {
    for (int rot : {64, 32}) {
      auto x = randn(std::size_t(heads * head_dim), 3);
      const auto orig = x;
      rope(x.data(), heads, head_dim, rot, pos, 100000.0f);
      for (int h = 0; h < heads; ++h) {
        for (int i = 0; i < head_dim / 2; ++i) {
          const float* o = orig.data() + h * head_dim + 2 * i;
          const float* r = x.data() + h * head_dim + 2 * i;
          if (2 * i >= rot) {
            EXPECT_EQ(r[0], o[0]);
            EXPECT_EQ(r[1], o[1]);
            continue;
          }
          const double th = double(pos) * std::pow(100000.0, -2.0 * i / rot);
          const double e0 = o[0] * std::cos(th) - o[1] * std::sin(th);
          const double e1 = o[0] * std::sin(th) + o[1] * std::cos(th);
          // float angle stepping loses ~1e-7 relative per step; at pos 4000 that is ~1e-3 rad.
          const double tol = 1e-5 + 5e-7 * double(pos) * (std::fabs(o[0]) + std::fabs(o[1]));
          ASSERT_NEAR(r[0], e0, tol) << "pos " << pos << " pair " << i;
          ASSERT_NEAR(r[1], e1, tol) << "pos " << pos << " pair " << i;
        }
      }
    }
  }
}

TEST(Ops, RopePositionZeroIsIdentity) {
  auto x = randn(128, 4);
  const auto orig = x;
  rope(x.data(), 2, 64, 64, 0, 10000.0f);
  EXPECT_EQ(x, orig);
}

TEST(Ops, Softmax) {
  for (std::size_t n : {1u, 5u, 1000u}) {
    auto x = randn(n, 5, 10.0f);
    const auto orig = x;
    softmax(x.data(), std::int64_t(n));
    double mx = -1e30, sum = 0;
    for (float v : orig) mx = std::max(mx, double(v));
    for (float v : orig) sum += std::exp(double(v) - mx);
    double total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double e = std::exp(double(orig[i]) - mx) / sum;
      ASSERT_NEAR(x[i], e, 1e-6 * e + 1e-9);
      total += x[i];
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
  std::vector<float> big{1000.0f, 1000.0f, -INFINITY};
  softmax(big.data(), 3);
  EXPECT_FLOAT_EQ(big[0], 0.5f);
  EXPECT_EQ(big[2], 0.0f);
}

TEST(Ops, SiluMulAndAdd) {
  const auto g = randn(1536, 6, 4.0f), u = randn(1536, 7);
  std::vector<float> out(1536);
  silu_mul(g.data(), u.data(), 1536, out.data());
  for (std::size_t i = 0; i < g.size(); ++i) {
    const double e = double(g[i]) / (1.0 + std::exp(-double(g[i]))) * u[i];
    ASSERT_NEAR(out[i], e, 1e-6 * std::fabs(e) + 1e-7);
  }
  auto y = g;
  add_inplace(y.data(), u.data(), 1536);
  for (std::size_t i = 0; i < g.size(); ++i) ASSERT_EQ(y[i], g[i] + u[i]);
  auto a = g;
  silu_mul(a.data(), u.data(), 1536, a.data());  // aliasing gate
  EXPECT_EQ(a, out);
}

}  // namespace
}  // namespace prima::kernels
