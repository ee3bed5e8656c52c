// kernels/cuda/fp8_e4m3.h on the host: every code decodes to the format's value, every finite
// code survives a round trip, encoding picks the nearest code (ties to even) and saturates,
// and the per-tensor scale keeps a tensor within the format's precision. (No CPU kernel has
// FP8; these are the format's definition. tests/gpu holds the device side to the host's and
// to cuda_fp8.h's conversions.)
#include "kernels/cuda/fp8_e4m3.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "tests/kernels/cpu/random_data.h"

namespace prima::cuda {
namespace {

// The value of a code from the format's definition, in double.
double reference_value(int code) {
  const int e = (code >> 3) & 0xf, m = code & 7;
  const double mag = e == 0 ? std::ldexp(double(m), -9) : std::ldexp(1.0 + m / 8.0, e - 7);
  return (code & 0x80) ? -mag : mag;
}

bool is_nan_code(int code) {
  return (code & 0x7f) == 0x7f;
}

// The nearest positive finite code to a (ties to the even code), from a scan of all of them.
int nearest_code(double a) {
  int best = 0;
  for (int c = 1; c <= 0x7e; ++c) {
    const double d = std::fabs(reference_value(c) - a), bd = std::fabs(reference_value(best) - a);
    if (d < bd || (d == bd && (c & 1) == 0)) best = c;
  }
  return best;
}

TEST(CudaFp8E4M3, DecodesEveryCode) {
  for (int c = 0; c < 256; ++c) {
    const float v = fp8_e4m3_decode(std::uint8_t(c));
    if (is_nan_code(c)) {
      EXPECT_TRUE(std::isnan(v)) << c;
    } else {
      EXPECT_EQ(double(v), reference_value(c)) << c;
    }
  }
  EXPECT_EQ(fp8_e4m3_decode(0x7e), 448.0f);
  EXPECT_EQ(fp8_e4m3_decode(0x01), std::ldexp(1.0f, -9));
}

TEST(CudaFp8E4M3, RoundTripsEveryFiniteCode) {
  for (int c = 0; c < 256; ++c)
    if (!is_nan_code(c)) {
      EXPECT_EQ(fp8_e4m3_encode(fp8_e4m3_decode(std::uint8_t(c))), c) << c;
    }
}

TEST(CudaFp8E4M3, EncodesToTheNearestCodeTiesToEven) {
  const auto x = kernels::testing::randn(4000, 7, 60.0f);
  for (float v : x) {
    const int expect = nearest_code(std::fabs(double(v))) | (v < 0 ? 0x80 : 0);
    ASSERT_EQ(fp8_e4m3_encode(v), expect) << v;
  }
  // Midpoints: 1.0625 lies between 1.0 (m = 0) and 1.125 (m = 1): to 1.0; 1.1875 to 1.25.
  EXPECT_EQ(fp8_e4m3_decode(fp8_e4m3_encode(1.0625f)), 1.0f);
  EXPECT_EQ(fp8_e4m3_decode(fp8_e4m3_encode(1.1875f)), 1.25f);
  // Subnormal midpoint 2^-10 (between 0 and 2^-9) goes to 0, 3 * 2^-10 to 2 * 2^-9.
  EXPECT_EQ(fp8_e4m3_encode(std::ldexp(1.0f, -10)), 0);
  EXPECT_EQ(fp8_e4m3_encode(std::ldexp(3.0f, -10)), 2);
}

TEST(CudaFp8E4M3, SaturatesAndKeepsNan) {
  EXPECT_EQ(fp8_e4m3_encode(1e6f), 0x7e);
  EXPECT_EQ(fp8_e4m3_encode(-1e6f), 0xfe);
  EXPECT_EQ(fp8_e4m3_encode(std::numeric_limits<float>::infinity()), 0x7e);
  EXPECT_EQ(fp8_e4m3_encode(std::numeric_limits<float>::quiet_NaN()), 0x7f);
  EXPECT_EQ(fp8_e4m3_encode(-0.0f), 0x80);
}

TEST(CudaFp8E4M3, PerTensorScaleKeepsRelativeError) {
  const auto x = kernels::testing::randn(2048, 9, 0.02f);
  float amax = 0.0f;
  for (float v : x) amax = std::fmax(amax, std::fabs(v));
  const float scale = fp8_e4m3_scale(amax);
  EXPECT_EQ(fp8_e4m3_encode_scaled(amax, scale), 0x7e);
  for (float v : x) {
    const float back = fp8_e4m3_decode_scaled(fp8_e4m3_encode_scaled(v, scale), scale);
    // Half a step: 2^-4 relative for normals, half of 2^-9 * scale below 2^-6 * scale.
    EXPECT_LE(std::fabs(back - v), std::fabs(v) / 16.0f + scale * std::ldexp(1.0f, -10) * 1.001f)
        << v;
  }
  EXPECT_EQ(fp8_e4m3_scale(0.0f), 1.0f);
}

}  // namespace
}  // namespace prima::cuda
