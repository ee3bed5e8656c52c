// kernels/cuda/block_quant.h and half_math.h on the host, held bit for bit to kernels/cpu's
// dequantize_row, quantize_row and fp16/bf16 conversions on seeded random data (these run in CI;
// the device kernels that use the same functions are checked in tests/gpu).
#include "kernels/cuda/block_quant.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/quant.h"
#include "tests/kernels/cpu/random_data.h"

namespace prima::cuda {
namespace {

using kernels::DType;
using kernels::testing::randn;

template <typename Block>
void expect_dequant_matches_cpu(DType type, std::uint32_t seed) {
  const std::int64_t n = 32 * 48;
  const auto x = randn(n, seed, 2.5f);
  std::vector<Block> blocks(std::size_t(n / 32));
  kernels::quantize_row(type, x.data(), blocks.data(), n);
  std::vector<float> cpu(static_cast<std::size_t>(n));
  kernels::dequantize_row(type, blocks.data(), cpu.data(), n);
  const auto act = randn(32, seed + 1);
  for (std::size_t b = 0; b < blocks.size(); ++b) {
    float dot = 0.0f;
    for (int j = 0; j < 32; ++j) {
      const float v = dequant(blocks[b], j);
      ASSERT_EQ(float_bits(v), float_bits(cpu[32 * b + j])) << "block " << b << " element " << j;
      dot += v * act[j];
    }
    EXPECT_EQ(float_bits(block_dot(blocks[b], act.data())), float_bits(dot));
  }
}

TEST(CudaBlockQuant, Q4_0MatchesCpuDequantize) {
  expect_dequant_matches_cpu<BlockQ4_0>(DType::kQ4_0, 11);
}
TEST(CudaBlockQuant, Q4_1MatchesCpuDequantize) {
  expect_dequant_matches_cpu<BlockQ4_1>(DType::kQ4_1, 12);
}
TEST(CudaBlockQuant, Q8_0MatchesCpuDequantize) {
  expect_dequant_matches_cpu<BlockQ8_0>(DType::kQ8_0, 13);
}

// quantize_block (the synthetic weights' quantizer on the device) writes kernels/cpu's
// quantize_row bytes: random blocks, a block of zeros, a constant block, codes at rounding ties
// (multiples of d / 2), and a block whose largest magnitude appears with both signs.
template <typename Block>
void expect_quantize_matches_cpu(DType type, std::uint32_t seed) {
  std::vector<float> x = randn(32 * 64, seed, 1.5f);
  for (int j = 0; j < 32; ++j) {
    x[std::size_t(j)] = 0.0f;                                        // block 0: zeros
    x[std::size_t(32 + j)] = 0.25f;                                  // block 1: constant
    x[std::size_t(64 + j)] = 0.0625f * float(j - 16);                // block 2: on a grid (ties)
    x[std::size_t(96 + j)] = j == 3 ? -2.0f : j == 9 ? 2.0f : 0.5f;  // block 3: +-amax
  }
  const std::size_t nb = x.size() / 32;
  std::vector<Block> cpu(nb), dev(nb);
  kernels::quantize_row(type, x.data(), cpu.data(), std::int64_t(x.size()));
  for (std::size_t b = 0; b < nb; ++b) quantize_block(x.data() + 32 * b, &dev[b]);
  for (std::size_t b = 0; b < nb; ++b)
    EXPECT_EQ(std::memcmp(&cpu[b], &dev[b], sizeof(Block)), 0) << "block " << b;
}

TEST(CudaBlockQuant, QuantizeBlockMatchesCpuQuantizeRow) {
  expect_quantize_matches_cpu<BlockQ4_0>(DType::kQ4_0, 41);
  expect_quantize_matches_cpu<BlockQ4_1>(DType::kQ4_1, 42);
  expect_quantize_matches_cpu<BlockQ8_0>(DType::kQ8_0, 43);
}

TEST(CudaBlockQuant, NibbleOrderIsLowThenHigh) {
  BlockQ4_1 b{};
  b.d = kernels::fp32_to_fp16(1.0f);
  b.m = 0;
  b.qs[3] = 0x5a;  // element 3 = 0xa, element 19 = 0x5
  EXPECT_EQ(dequant(b, 3), 10.0f);
  EXPECT_EQ(dequant(b, 19), 5.0f);
  EXPECT_EQ(dequant(b, 4), 0.0f);
}

TEST(CudaHalfMath, EveryHalfAndBfloatMatchesCpu) {
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto u = static_cast<std::uint16_t>(h);
    const float a = half_to_float(u), b = kernels::fp16_to_fp32(u);
    ASSERT_EQ(float_bits(a), float_bits(b)) << "half 0x" << std::hex << h;
    ASSERT_EQ(float_bits(bfloat_to_float(u)), float_bits(kernels::bf16_to_fp32(u)));
  }
}

}  // namespace
}  // namespace prima::cuda
