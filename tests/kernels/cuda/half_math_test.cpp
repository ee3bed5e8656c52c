// kernels/cuda/half_math.h's float -> FP16 / BF16 rounding on the host, held bit for bit to
// kernels/cpu's conversions over a sweep of float bit patterns (every 251st of the 2^32, which
// crosses every exponent, the subnormal and overflow edges and NaNs) and the edge values.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/cpu/quant.h"
#include "kernels/cuda/half_math.h"

namespace prima::cuda {
namespace {

TEST(HalfMath, FloatToHalfAndBfloatMatchTheCpuBitForBit) {
  for (std::uint64_t u = 0; u < (1ull << 32); u += 251) {
    const float f = std::bit_cast<float>(std::uint32_t(u));
    ASSERT_EQ(float_to_half(f), kernels::fp32_to_fp16(f)) << "bits " << std::hex << u;
    ASSERT_EQ(float_to_bfloat(f), kernels::fp32_to_bf16(f)) << "bits " << std::hex << u;
  }
  for (float f : {0.0f, -0.0f, 65504.0f, 65519.99f, 65520.0f, 6.1035156e-05f, 5.9604645e-08f,
                  2.9802322e-08f, 2.9802326e-08f, 1.0f / 3, std::numeric_limits<float>::infinity(),
                  std::numeric_limits<float>::denorm_min(), -1e-30f}) {
    EXPECT_EQ(float_to_half(f), kernels::fp32_to_fp16(f)) << f;
    EXPECT_EQ(float_to_bfloat(f), kernels::fp32_to_bf16(f)) << f;
  }
  EXPECT_EQ(float_to_half(std::nanf("")) & 0x7e00, 0x7e00);
}

TEST(HalfMath, RoundTripsEveryHalf) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    if ((h & 0x7c00) == 0x7c00 && (h & 0x3ff)) continue;  // NaN payloads
    EXPECT_EQ(float_to_half(half_to_float(std::uint16_t(h))), h) << std::hex << h;
  }
}

}  // namespace
}  // namespace prima::cuda
