// GGUF block dequantization on host and device (PRIMA_HD): element j of a Q4_0, Q4_1 or Q8_0
// block (kernels/cpu/quant.h's layouts, used in place), a block's dot product with 32 floats,
// and its dot product with a block of activations quantized to its partner type (Q4_0 and Q8_0
// with Q8_0, Q4_1 with Q8_1) as kernels/cpu's matmul takes it: the integer products summed
// exactly, then one float scale, d_w * d_x * sum (+ m_w * s_x for Q4_1), llama.cpp's per-block
// formula. The same arithmetic as kernels/cpu's dequantize_row: x = (q - 8) * d, q * d + m,
// q * d with d and m decoded from fp16. Header only; no state.
#pragma once

#include <cstdint>

#include "kernels/cpu/quant.h"
#include "kernels/cuda/half_math.h"

namespace prima::cuda {

using kernels::BlockQ4_0;
using kernels::BlockQ4_1;
using kernels::BlockQ8_0;
using kernels::BlockQ8_1;

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

PRIMA_HD float block_dot_q8(const BlockQ4_0& w, const BlockQ8_0& x) {
  int sum = 0;
  for (int j = 0; j < 16; ++j)
    sum += ((w.qs[j] & 0xf) - 8) * x.qs[j] + ((w.qs[j] >> 4) - 8) * x.qs[j + 16];
  return half_to_float(w.d) * half_to_float(x.d) * float(sum);
}
PRIMA_HD float block_dot_q8(const BlockQ4_1& w, const BlockQ8_1& x) {
  int sum = 0;
  for (int j = 0; j < 16; ++j) sum += (w.qs[j] & 0xf) * x.qs[j] + (w.qs[j] >> 4) * x.qs[j + 16];
  return half_to_float(w.d) * half_to_float(x.d) * float(sum) +
         half_to_float(w.m) * half_to_float(x.s);
}
PRIMA_HD float block_dot_q8(const BlockQ8_0& w, const BlockQ8_0& x) {
  int sum = 0;
  for (int j = 0; j < kBlockElems; ++j) sum += w.qs[j] * x.qs[j];
  return half_to_float(w.d) * half_to_float(x.d) * float(sum);
}

}  // namespace prima::cuda
