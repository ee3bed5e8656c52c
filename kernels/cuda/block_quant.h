// GGUF block dequantization on host and device (PRIMA_HD): element j of a Q4_0, Q4_1 or Q8_0
// block (kernels/cpu/quant.h's layouts, used in place), and a block's dot product with 32
// floats. The same arithmetic as kernels/cpu's dequantize_row: x = (q - 8) * d, q * d + m,
// q * d with d and m decoded from fp16. Header only; no state.
#pragma once

#include <cstdint>

#include "kernels/cpu/quant.h"
#include "kernels/cuda/half_math.h"

namespace prima::cuda {

using kernels::BlockQ4_0;
using kernels::BlockQ4_1;
using kernels::BlockQ8_0;

inline constexpr int kBlockElems = 32;

// The 4-bit code of element j (0..31): the low nibble of byte j, or the high nibble of byte
// j - 16.
PRIMA_HD int nibble(const std::uint8_t* qs, int j) {
  return j < 16 ? (qs[j] & 0xf) : (qs[j - 16] >> 4);
}

PRIMA_HD float dequant(const BlockQ4_0& b, int j) {
  return float(nibble(b.qs, j) - 8) * half_to_float(b.d);
}
PRIMA_HD float dequant(const BlockQ4_1& b, int j) {
  return float(nibble(b.qs, j)) * half_to_float(b.d) + half_to_float(b.m);
}
PRIMA_HD float dequant(const BlockQ8_0& b, int j) {
  return float(b.qs[j]) * half_to_float(b.d);
}

// sum_j dequant(b, j) * x[j] over the block's 32 elements, in float, element order.
template <typename Block>
PRIMA_HD float block_dot(const Block& b, const float* x) {
  float s = 0.0f;
  for (int j = 0; j < kBlockElems; ++j) s += dequant(b, j) * x[j];
  return s;
}

}  // namespace prima::cuda
