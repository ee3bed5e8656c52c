// Tests for kernels/cpu/ops.h against double-precision formulas on seeded random data.
#include "kernels/cpu/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/cpu/ops_kernels.h"
#include "tests/kernels/cpu/random_data.h"

namespace prima::kernels {
namespace {

using testing::randn;

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

std::int64_t ulps(float a, float b) {
  std::int32_t ia, ib;
  std::memcpy(&ia, &a, 4);
  std::memcpy(&ib, &b, 4);
  return std::llabs(std::int64_t(ia) - std::int64_t(ib));
}

bool have_avx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

TEST(Ops, VexpIsWithinItsStatedErrorAndHandlesTheRangeEnds) {
  // llama.cpp's vector expf: max error 1.45 + 0.5 ulp over its range; 0 below about -104
  // (subnormals on the way), +inf above about 88.38.
  for (float x = -87.0f; x < 88.0f; x += 0.01234f) {
    const float want = static_cast<float>(std::exp(double(x)));
    ASSERT_LE(ulps(detail::vexp(x), want), 2) << x;
  }
  EXPECT_EQ(detail::vexp(0.0f), 1.0f);
  EXPECT_EQ(detail::vexp(-INFINITY), 0.0f);
  EXPECT_EQ(detail::vexp(-200.0f), 0.0f);
  EXPECT_EQ(detail::vexp(100.0f), INFINITY);
  EXPECT_EQ(detail::vexp(INFINITY), INFINITY);
  EXPECT_TRUE(std::isnan(detail::vexp(std::numeric_limits<float>::quiet_NaN())));
  const float sub = detail::vexp(-95.0f);  // subnormal result, rounded once
  EXPECT_GT(sub, 0.0f);
  EXPECT_LT(sub, std::numeric_limits<float>::min());
  EXPECT_LE(ulps(sub, static_cast<float>(std::exp(-95.0))), 2);
}

TEST(Ops, Avx2VexpLoopsEqualThePortableOnesBitForBit) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const auto& a = detail::ops_portable_kernels();
  const auto& b = detail::ops_avx2_kernels();
  // Values over the whole range, the ends and the subnormal zone included.
  std::vector<float> g = randn(4099, 11, 30.0f);
  for (float v : {-150.0f, -120.0f, -103.9f, -95.0f, -88.0f, 0.0f, 88.3f, 89.0f, 150.0f})
    g.push_back(v);
  const auto u = randn(g.size(), 12);
  std::vector<float> oa(g.size()), ob(g.size());
  a.silu_mul_vexp(g.data(), u.data(), std::int64_t(g.size()), oa.data());
  b.silu_mul_vexp(g.data(), u.data(), std::int64_t(g.size()), ob.data());
  for (std::size_t i = 0; i < g.size(); ++i)
    ASSERT_EQ(std::memcmp(&oa[i], &ob[i], 4), 0) << g[i] << ": " << oa[i] << " vs " << ob[i];
  for (std::int64_t n : {1, 15, 16, 17, 255, 256, 1000}) {
    auto xa = randn(std::size_t(n), std::uint32_t(n), 3.0f);
    if (n > 1) xa[std::size_t(n) / 2] = -INFINITY;  // a masked position
    auto xb = xa;
    float max = -INFINITY;
    for (float v : xa) max = v > max ? v : max;
    const double sa = a.exp_sum(xa.data(), n, max), sb = b.exp_sum(xb.data(), n, max);
    EXPECT_EQ(sa, sb) << n;
    EXPECT_EQ(xa, xb) << n;
    double want = 0;
    for (float v : xa) want += v;
    EXPECT_NEAR(sa, want, 1e-5 * want) << n;
    if (n > 1) {
      EXPECT_EQ(xa[std::size_t(n) / 2], 0.0f);
    }
  }
}

TEST(Ops, Avx2RopeRotationEqualsThePortableOneBitForBit) {
  if (!have_avx2()) GTEST_SKIP() << "no AVX2/FMA on this CPU";
  const auto& a = detail::ops_portable_kernels();
  const auto& b = detail::ops_avx2_kernels();
  for (int rot : {64, 32, 12, 6}) {  // vector part only, vector part and tail, tail only
    const int heads = 3, head_dim = 64;
    const auto angles = randn(std::size_t(rot), std::uint32_t(rot), 3.0f);
    std::vector<float> cc(static_cast<std::size_t>(rot)), ss(static_cast<std::size_t>(rot));
    for (int j = 0; j + 1 < rot; j += 2) {
      cc[std::size_t(j)] = cc[std::size_t(j) + 1] = std::cos(angles[std::size_t(j)]);
      ss[std::size_t(j)] = ss[std::size_t(j) + 1] = std::sin(angles[std::size_t(j)]);
    }
    auto xa = randn(std::size_t(heads * head_dim), 5, 4.0f);
    auto xb = xa;
    const auto orig = xa;
    a.rope_rotate(xa.data(), heads, head_dim, rot, cc.data(), ss.data());
    b.rope_rotate(xb.data(), heads, head_dim, rot, cc.data(), ss.data());
    for (std::size_t i = 0; i < xa.size(); ++i) {
      ASSERT_EQ(std::memcmp(&xa[i], &xb[i], 4), 0) << "rot " << rot << " element " << i;
      if (int(i % head_dim) >= rot) {
        EXPECT_EQ(xa[i], orig[i]);
      }
    }
  }
}

TEST(Ops, RopeQkEqualsRopeOfEach) {
  for (std::int64_t pos : {0, 3, 129, 5000}) {
    auto q = randn(9 * 64, 1), k = randn(3 * 64, 2);
    auto q1 = q, k1 = k;
    rope_qk(q.data(), 9, k.data(), 3, 64, 64, pos, 100000.0f);
    rope(q1.data(), 9, 64, 64, pos, 100000.0f);
    rope(k1.data(), 3, 64, 64, pos, 100000.0f);
    EXPECT_EQ(q, q1) << pos;
    EXPECT_EQ(k, k1) << pos;
    if (pos > 0) {
      EXPECT_NE(q, randn(9 * 64, 1)) << pos;
    }
  }
}

TEST(Ops, SiluMulUsesLibmExpForEachRowsTail) {
  // Rows of 20: values 0..15 of each row through vexp, 16..19 through libm's expf.
  const auto g = randn(60, 21, 4.0f), u = randn(60, 22);
  std::vector<float> out(60);
  silu_mul(g.data(), u.data(), 60, out.data(), 20);
  for (int i = 0; i < 60; ++i) {
    const float e = (i % 20) < 16 ? detail::vexp(0.0f - g[i]) : std::exp(-g[i]);
    ASSERT_EQ(out[i], g[i] / (1.0f + e) * u[i]) << i;
  }
}

}  // namespace
}  // namespace prima::kernels
