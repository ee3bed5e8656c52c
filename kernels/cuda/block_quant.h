// GGUF block dequantization on host and device (PRIMA_HD): element j of a Q4_0, Q4_1 or Q8_0
// block (kernels/cpu/quant.h's layouts, used in place), a block's dot product with 32 floats,
// and its dot product with a block of activations quantized to its partner type (Q4_0 and Q8_0
// with Q8_0, Q4_1 with Q8_1) as kernels/cpu's matmul takes it: the integer products summed
// exactly, then one float scale, d_w * d_x * sum (+ m_w * s_x for Q4_1), llama.cpp's per-block
// formula. The same arithmetic as kernels/cpu's dequantize_row: x = (q - 8) * d, q * d + m,
// q * d with d and m decoded from fp16. And the other way, a block of 32 floats quantized as
// kernels/cpu's quantize_row quantizes weights (quantize_block), its arithmetic step for step,
// the rounding of each operation kept on the device (mul_rn, add_rn: nvcc would fuse them).
// Header only; no state.
#pragma once

#include <cstdint>

#include "kernels/cpu/quant.h"
#include "kernels/cuda/half_math.h"
#include "kernels/cuda/synthetic_math.h"

#if !defined(__CUDA_ARCH__)
#include <cmath>
#endif

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

// Nearest, ties to even (kernels/cpu's round_even) and ties away from zero (its round_away).
PRIMA_HD int round_even_int(float x) {
#if defined(__CUDA_ARCH__)
  return int(rintf(x));
#else
  return int(std::nearbyint(x));
#endif
}
PRIMA_HD int round_away_int(float x) {
#if defined(__CUDA_ARCH__)
  return int(roundf(x));
#else
  return int(std::lround(x));
#endif
}
PRIMA_HD float abs_f(float x) {
  return x < 0.0f ? -x : x;
}

// Q4_0: d = (the value of largest magnitude, the first on ties) / -8, codes round(x / d + 8)
// clamped to 0..15.
PRIMA_HD void quantize_block(const float* x, BlockQ4_0* y) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < kBlockElems; ++j)
    if (abs_f(x[j]) > amax) {
      amax = abs_f(x[j]);
      max = x[j];
    }
  const float d = max / -8.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = float_to_half(d);
  for (int j = 0; j < 16; ++j) {
    int q0 = round_away_int(add_rn(mul_rn(x[j], id), 8.0f));
    int q1 = round_away_int(add_rn(mul_rn(x[j + 16], id), 8.0f));
    q0 = q0 > 15 ? 15 : (q0 < 0 ? 0 : q0);
    q1 = q1 > 15 ? 15 : (q1 < 0 ? 0 : q1);
    y->qs[j] = std::uint8_t(q0 | q1 << 4);
  }
}

// Q4_1: d = (max - min) / 15, m = min, codes round((x - min) / d) clamped to 0..15.
PRIMA_HD void quantize_block(const float* x, BlockQ4_1* y) {
  float mn = x[0], mx = x[0];
  for (int j = 1; j < kBlockElems; ++j) {
    mn = x[j] < mn ? x[j] : mn;  // std::min / std::max's choice on equal values
    mx = mx < x[j] ? x[j] : mx;
  }
  const float d = (mx - mn) / 15.0f;
  const float id = d != 0.0f ? 1.0f / d : 0.0f;
  y->d = float_to_half(d);
  y->m = float_to_half(mn);
  for (int j = 0; j < 16; ++j) {
    int q0 = round_away_int(mul_rn(x[j] - mn, id));
    int q1 = round_away_int(mul_rn(x[j + 16] - mn, id));
    q0 = q0 > 15 ? 15 : (q0 < 0 ? 0 : q0);
    q1 = q1 > 15 ? 15 : (q1 < 0 ? 0 : q1);
    y->qs[j] = std::uint8_t(q0 | q1 << 4);
  }
}

// Q8_0: d = amax / 127, codes round_even(x * 127 / amax).
PRIMA_HD void quantize_block(const float* x, BlockQ8_0* y) {
  float amax = 0.0f;
  for (int j = 0; j < kBlockElems; ++j) amax = amax < abs_f(x[j]) ? abs_f(x[j]) : amax;
  const float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  y->d = float_to_half(d);
  for (int j = 0; j < kBlockElems; ++j) y->qs[j] = std::int8_t(round_even_int(mul_rn(x[j], id)));
}

}  // namespace prima::cuda
