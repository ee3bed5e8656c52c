// FP8 E4M3 (the OCP "E4M3FN" format of Hopper's tensor cores) on host and device (PRIMA_HD),
// with a per-tensor scale: a value x is stored as the code of x / scale and read back as
// decode(code) * scale, scale = amax / 448 for a tensor whose largest magnitude is amax.
//
// Format: sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 is subnormal
// (m / 8 * 2^-6); 0x7f / 0xff are NaN; there is no infinity; the largest finite is 448 (0x7e).
// Encoding rounds to nearest, ties to even, and saturates at +-448 (NaN stays NaN), as
// cuda_fp8.h's __nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3) does. Header only.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/cuda/host_device.h"

namespace prima::cuda {

inline constexpr float kFp8E4M3Max = 448.0f;

PRIMA_HD float fp8_e4m3_decode(std::uint8_t code) {
  const int e = (code >> 3) & 0xf, m = code & 0x7;
  float mag;
  if (e == 0xf && m == 0x7)
    mag = bits_float(0x7fc00000u);  // NaN
  else if (e == 0)
    mag = ldexpf(float(m), -9);
  else
    mag = ldexpf(float(8 + m), e - 10);
  return (code & 0x80) ? -mag : mag;
}

// Round to nearest even (the default rounding mode on both sides).
PRIMA_HD float round_even(float x) {
  return rintf(x);
}

PRIMA_HD std::uint8_t fp8_e4m3_encode(float x) {
  const std::uint32_t u = float_bits(x);
  const std::uint8_t sign = (u >> 24) & 0x80;
  const float a = bits_float(u & 0x7fffffffu);
  if (!(a == a)) return std::uint8_t(sign | 0x7f);  // NaN
  if (a >= kFp8E4M3Max) return std::uint8_t(sign | 0x7e);
  if (a < 0.015625f) {  // below 2^-6: steps of 2^-9; 8 steps is the smallest normal, code 8
    return std::uint8_t(sign | int(round_even(a * 512.0f)));
  }
  int e2;
  const float f = frexpf(a, &e2);          // a = f * 2^e2, f in [0.5, 1)
  int m = int(round_even(f * 16.0f)) - 8;  // 3 mantissa bits of 2f in [1, 2)
  int e = e2 - 1 + 7;                      // biased exponent of 2f * 2^(e2 - 1)
  if (m == 8) m = 0, ++e;                  // rounded up to the next power of two
  const int code = e << 3 | m;
  return std::uint8_t(sign | (code > 0x7e ? 0x7e : code));
}

// The per-tensor scale that maps a tensor's largest magnitude onto 448 (1 for an all-zero
// tensor).
PRIMA_HD float fp8_e4m3_scale(float amax) {
  return amax > 0.0f ? amax / kFp8E4M3Max : 1.0f;
}

PRIMA_HD std::uint8_t fp8_e4m3_encode_scaled(float x, float scale) {
  return fp8_e4m3_encode(x / scale);
}
PRIMA_HD float fp8_e4m3_decode_scaled(std::uint8_t code, float scale) {
  return fp8_e4m3_decode(code) * scale;
}

}  // namespace prima::cuda
