// IEEE binary16 and bfloat16 to and from float on host and device (PRIMA_HD): the same bits
// as kernels/cpu's fp16_to_fp32 / bf16_to_fp32 / fp32_to_fp16 / fp32_to_bf16 (round to nearest
// even), written with integer operations only, so a GGUF block's scales decode and a 16-bit
// output rounds identically on both sides. Header only; no state.
#pragma once

#include <cstdint>

#include "kernels/cuda/host_device.h"

namespace prima::cuda {

PRIMA_HD float half_to_float(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1f;
  std::uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    if (mant == 0) return bits_float(sign);
    int e = -1;  // subnormal: normalise
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400) == 0);
    mant &= 0x3ff;
    return bits_float(sign | std::uint32_t(127 - 15 - e) << 23 | mant << 13);
  }
  if (exp == 0x1f) return bits_float(sign | 0x7f800000u | mant << 13);  // inf / nan
  return bits_float(sign | (exp + 127 - 15) << 23 | mant << 13);
}

PRIMA_HD float bfloat_to_float(std::uint16_t h) {
  return bits_float(std::uint32_t(h) << 16);
}

// Rounds `r` of `shift` low bits off v to nearest even.
PRIMA_HD std::uint32_t round_shift(std::uint32_t v, int shift) {
  const std::uint32_t out = v >> shift, rest = v & ((1u << shift) - 1), half = 1u << (shift - 1);
  return out + (rest > half || (rest == half && (out & 1u)) ? 1u : 0u);
}

PRIMA_HD std::uint16_t float_to_half(float f) {
  const std::uint32_t x = float_bits(f);
  const std::uint16_t sign = std::uint16_t((x >> 16) & 0x8000u);
  const std::uint32_t a = x & 0x7fffffffu;
  if (a >= 0x7f800000u) return sign | (a > 0x7f800000u ? 0x7e00u : 0x7c00u);  // nan / inf
  const int e = int(a >> 23);
  if (e >= 143) return sign | 0x7c00u;  // 2^16 and up: infinity
  if (e >= 113) {                       // normal: the carry of rounding may reach infinity
    const std::uint32_t h = std::uint32_t(e - 112) << 10 | (a & 0x7fffffu) >> 13;
    const std::uint32_t rest = a & 0x1fffu;
    return sign | std::uint16_t(h + (rest > 0x1000u || (rest == 0x1000u && (h & 1u)) ? 1u : 0u));
  }
  if (e < 102) return sign;  // below 2^-25: zero
  return sign | std::uint16_t(round_shift((a & 0x7fffffu) | 0x800000u, 126 - e));  // subnormal
}

PRIMA_HD std::uint16_t float_to_bfloat(float f) {
  const std::uint32_t x = float_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((x >> 16) | 0x40u);  // quiet nan
  return std::uint16_t((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

}  // namespace prima::cuda
