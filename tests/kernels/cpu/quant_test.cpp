// Tests for kernels/cpu/quant.h: half-precision conversions (exhaustive round trips and
// rounding edge cases), type traits, and quantize/dequantize round trips within the error
// bounds each format's rounding allows.
#include "kernels/cpu/quant.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

namespace prima::kernels {
namespace {

float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

TEST(Fp16, ExhaustiveRoundTrip) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = fp16_to_fp32(std::uint16_t(h));
    const bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
    if (nan) {
      EXPECT_TRUE(std::isnan(f)) << h;
      EXPECT_TRUE(std::isnan(fp16_to_fp32(fp32_to_fp16(f)))) << h;
      continue;
    }
    ASSERT_EQ(fp32_to_fp16(f), h) << "half " << h << " -> " << f;
  }
}

TEST(Fp16, DecodesKnownValues) {
  EXPECT_EQ(fp16_to_fp32(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_fp32(0xc000), -2.0f);
  EXPECT_EQ(fp16_to_fp32(0x7bff), 65504.0f);
  EXPECT_EQ(fp16_to_fp32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(fp16_to_fp32(0x03ff), std::ldexp(1023.0f, -24));
  EXPECT_EQ(fp16_to_fp32(0x0400), std::ldexp(1.0f, -14));
  EXPECT_TRUE(std::isinf(fp16_to_fp32(0x7c00)));
  EXPECT_TRUE(std::signbit(fp16_to_fp32(0x8000)));
}

TEST(Fp16, RoundsToNearestEven) {
  EXPECT_EQ(fp32_to_fp16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);      // tie -> even
  EXPECT_EQ(fp32_to_fp16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);  // tie -> even (up)
  EXPECT_EQ(fp32_to_fp16(std::nextafter(1.0f + std::ldexp(1.0f, -11), 2.0f)), 0x3c01);
  EXPECT_EQ(fp32_to_fp16(65504.0f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(65519.0f), 0x7bff);
  EXPECT_EQ(fp32_to_fp16(65520.0f), 0x7c00);  // tie above max -> inf
  EXPECT_EQ(fp32_to_fp16(1e10f), 0x7c00);
  EXPECT_EQ(fp32_to_fp16(-1e10f), 0xfc00);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -25)), 0x0000);     // tie -> even (zero)
  EXPECT_EQ(fp32_to_fp16(std::ldexp(3.0f, -25)), 0x0002);     // 1.5 ulp tie -> 2
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.5f, -25)), 0x0001);     // 0.75 ulp -> 1
  EXPECT_EQ(fp32_to_fp16(std::ldexp(2047.0f, -25)), 0x0400);  // max subnormal + half
  EXPECT_EQ(fp32_to_fp16(std::ldexp(1.0f, -30)), 0x0000);
  EXPECT_EQ(fp32_to_fp16(-0.0f), 0x8000);
  EXPECT_EQ(fp32_to_fp16(INFINITY), 0x7c00);
  const std::uint16_t nan = fp32_to_fp16(NAN);
  EXPECT_EQ(nan & 0x7c00, 0x7c00);
  EXPECT_NE(nan & 0x3ff, 0);
}

TEST(Fp16, MatchesCompilerConversionOnRandomFloats) {
  std::mt19937 rng(7);
  for (int i = 0; i < 1000000; ++i) {
    std::uint32_t u = rng();
    // Concentrate on the half range: exponents 100..150.
    u = (u & 0x807fffffu) | (std::uint32_t(100 + rng() % 51) << 23);
    const float f = from_bits(u);
    const _Float16 h = static_cast<_Float16>(f);
    std::uint16_t expect;
    std::memcpy(&expect, &h, 2);
    ASSERT_EQ(fp32_to_fp16(f), expect) << f;
  }
}

TEST(Bf16, ExhaustiveRoundTripAndRounding) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_fp32(std::uint16_t(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_fp32(fp32_to_bf16(f))));
      continue;
    }
    ASSERT_EQ(fp32_to_bf16(f), h);
  }
  EXPECT_EQ(fp32_to_bf16(from_bits(0x3f808000u)), 0x3f80);  // tie -> even
  EXPECT_EQ(fp32_to_bf16(from_bits(0x3f818000u)), 0x3f82);  // tie -> even (up)
  EXPECT_EQ(fp32_to_bf16(from_bits(0x3f808001u)), 0x3f81);
}

TEST(TypeTraits, SizesAndNames) {
  EXPECT_EQ(row_bytes(DType::kQ4_1, 576), 18u * 20u);
  EXPECT_EQ(row_bytes(DType::kQ8_0, 576), 18u * 34u);
  EXPECT_EQ(row_bytes(DType::kQ6_K, 512), 2u * 210u);
  EXPECT_EQ(row_bytes(DType::kQ8_K, 256), 292u);
  EXPECT_EQ(row_bytes(DType::kF16, 10), 20u);
  EXPECT_EQ(row_bytes(DType::kF32, 10), 40u);
  EXPECT_STREQ(type_traits(3)->name, "Q4_1");
  EXPECT_EQ(type_traits(14)->block_elems, 256);
  EXPECT_EQ(type_traits(30)->block_bytes, 2u);
  EXPECT_EQ(type_traits(6), nullptr);  // Q5_0: unsupported
  EXPECT_EQ(type_traits(99), nullptr);
}

std::vector<float> random_row(std::int64_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> x(static_cast<std::size_t>(n));
  for (auto& v : x) v = dist(rng);
  // Some blocks with an offset, some all-zero, some constant.
  for (std::int64_t i = 0; i < std::min<std::int64_t>(n, 32); ++i) x[i] += 3.0f * scale;
  if (n >= 128)
    for (std::int64_t i = 64; i < 96; ++i) x[i] = 0.0f;
  return x;
}

std::vector<float> round_trip(DType t, const std::vector<float>& x) {
  std::vector<std::uint8_t> q(row_bytes(t, std::int64_t(x.size())));
  quantize_row(t, x.data(), q.data(), std::int64_t(x.size()));
  std::vector<float> y(x.size());
  dequantize_row(t, q.data(), y.data(), std::int64_t(x.size()));
  return y;
}

float fp16_err(float v) {
  return std::fabs(v - fp16_to_fp32(fp32_to_fp16(v)));
}

TEST(Quant, Q8_0WithinHalfStep) {
  const auto x = random_row(1536, 1);
  const auto y = round_trip(DType::kQ8_0, x);
  for (std::size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
    const float d = amax / 127.0f;
    // Half a step, plus the error of storing d as f16 (times |q| <= 127), plus float slop.
    const float bound = 0.5f * d + 127.0f * fp16_err(d) + 1e-6f * amax;
    for (int j = 0; j < 32; ++j) ASSERT_LE(std::fabs(x[32 * b + j] - y[32 * b + j]), bound);
  }
}

TEST(Quant, Q8_1StoresScaledSum) {
  const auto x = random_row(576, 2);
  std::vector<BlockQ8_1> q(576 / 32);
  quantize_row(DType::kQ8_1, x.data(), q.data(), 576);
  for (const auto& b : q) {
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += b.qs[j];
    const float d = fp16_to_fp32(b.d);
    EXPECT_NEAR(fp16_to_fp32(b.s), d * float(sum), std::fabs(d * float(sum)) * 1e-3f + 1e-7f);
  }
  const auto y = round_trip(DType::kQ8_1, x);
  const auto y0 = round_trip(DType::kQ8_0, x);
  EXPECT_EQ(y, y0);  // same values as Q8_0
}

TEST(Quant, Q4_0WithinOneStep) {
  const auto x = random_row(1536, 3);
  const auto y = round_trip(DType::kQ4_0, x);
  for (std::size_t b = 0; b < x.size() / 32; ++b) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[32 * b + j]));
    const float d = amax / 8.0f;
    // The signed max maps exactly to -8; the opposite end (+8 steps) clamps to +7: one step.
    const float bound = d + 8.0f * fp16_err(d) + 1e-6f * amax;
    for (int j = 0; j < 32; ++j) ASSERT_LE(std::fabs(x[32 * b + j] - y[32 * b + j]), bound);
  }
}

TEST(Quant, Q4_1WithinHalfStep) {
  const auto x = random_row(1536, 4);
  const auto y = round_trip(DType::kQ4_1, x);
  for (std::size_t b = 0; b < x.size() / 32; ++b) {
    float mn = x[32 * b], mx = x[32 * b];
    for (int j = 0; j < 32; ++j) {
      mn = std::min(mn, x[32 * b + j]);
      mx = std::max(mx, x[32 * b + j]);
    }
    const float d = (mx - mn) / 15.0f;
    const float bound =
        0.5f * d + 15.0f * fp16_err(d) + fp16_err(mn) + 1e-6f * (std::fabs(mx) + std::fabs(mn));
    for (int j = 0; j < 32; ++j) ASSERT_LE(std::fabs(x[32 * b + j] - y[32 * b + j]), bound);
  }
}

TEST(Quant, Q8_KWithinHalfStepAndBsums) {
  const auto x = random_row(512, 5);
  std::vector<BlockQ8_K> q(2);
  quantize_row(DType::kQ8_K, x.data(), q.data(), 512);
  std::vector<float> y(512);
  dequantize_row(DType::kQ8_K, q.data(), y.data(), 512);
  for (int b = 0; b < 2; ++b) {
    float amax = 0;
    for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[256 * b + j]));
    EXPECT_NEAR(std::fabs(q[b].d), amax / 127.0f, amax * 1e-6f);
    for (int j = 0; j < 256; ++j)
      ASSERT_LE(std::fabs(x[256 * b + j] - y[256 * b + j]), 0.5f * amax / 127.0f * 1.0001f);
    for (int s = 0; s < 16; ++s) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += q[b].qs[16 * s + j];
      EXPECT_EQ(q[b].bsums[s], sum);
    }
  }
}

TEST(Quant, Q6_KWithinBound) {
  // Sub-blocks of very different magnitudes exercise the int8 sub-scales.
  auto x = random_row(1024, 6);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] *= float(1 + (i / 16) % 5);
  const auto y = round_trip(DType::kQ6_K, x);
  double err2 = 0, x2 = 0;
  for (std::size_t b = 0; b < x.size() / 256; ++b) {
    float amax = 0;
    for (int j = 0; j < 256; ++j) amax = std::max(amax, std::fabs(x[256 * b + j]));
    // Largest sub-scale s = amax/32; a sub-scale is stored to within s/256, so an element is
    // within half a (rounded) step or, when clamped at +31, within 32|s_i| - 31|s_i'| <= 1.13 s.
    const float bound = 1.13f * amax / 32.0f + 64.0f * fp16_err(amax / 32.0f / 128.0f) * 127.0f;
    for (int j = 0; j < 256; ++j) {
      const float e = std::fabs(x[256 * b + j] - y[256 * b + j]);
      ASSERT_LE(e, bound) << "block " << b << " elem " << j;
      err2 += double(e) * e;
      x2 += double(x[256 * b + j]) * x[256 * b + j];
    }
  }
  EXPECT_LT(std::sqrt(err2 / x2), 0.03);  // 6-bit: a few percent relative RMS error
}

TEST(Quant, Q6_KLayoutMatchesDocumentedPacking) {
  // One super-block with element i = (i % 64) - 32, sub-scale i for sub-block i, d = 1.
  BlockQ6_K b{};
  b.d = fp32_to_fp16(1.0f);
  for (int s = 0; s < 16; ++s) b.scales[s] = static_cast<std::int8_t>(s + 1);
  std::uint8_t q[256];
  for (int i = 0; i < 256; ++i) q[i] = static_cast<std::uint8_t>((i * 7) % 64);
  // Documented packing: for half h and l < 64, ql[64h + l] low nibble = low 4 bits of element
  // 128h + l, high nibble = element 128h + 64 + l; qh[32h + l] bits 2k..2k+1 = the top two
  // bits of element 128h + 32k + l.
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 64; ++l)
      b.ql[64 * h + l] = std::uint8_t((q[128 * h + l] & 15) | (q[128 * h + 64 + l] & 15) << 4);
    for (int l = 0; l < 32; ++l) {
      std::uint8_t v = 0;
      for (int k = 0; k < 4; ++k) v |= std::uint8_t((q[128 * h + 32 * k + l] >> 4) << (2 * k));
      b.qh[32 * h + l] = v;
    }
  }
  float y[256];
  dequantize_row(DType::kQ6_K, &b, y, 256);
  for (int i = 0; i < 256; ++i) ASSERT_EQ(y[i], float((i / 16) + 1) * float(q[i] - 32)) << i;
}

TEST(Quant, HalfTypesRoundTrip) {
  const auto x = random_row(64, 7);
  const auto yh = round_trip(DType::kF16, x);
  const auto yb = round_trip(DType::kBF16, x);
  const auto yf = round_trip(DType::kF32, x);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(yh[i], fp16_to_fp32(fp32_to_fp16(x[i])));
    EXPECT_EQ(yb[i], bf16_to_fp32(fp32_to_bf16(x[i])));
    EXPECT_EQ(yf[i], x[i]);
  }
}

TEST(Quant, ZeroBlocksStayZero) {
  std::vector<float> x(256, 0.0f);
  for (DType t :
       {DType::kQ4_0, DType::kQ4_1, DType::kQ8_0, DType::kQ8_1, DType::kQ6_K, DType::kQ8_K}) {
    const auto y = round_trip(t, x);
    for (float v : y) ASSERT_EQ(v, 0.0f) << type_traits(t)->name;
  }
}

}  // namespace
}  // namespace prima::kernels
