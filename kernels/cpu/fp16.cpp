// Half-precision conversions (IEEE binary16 and bfloat16), bit-exact with ggml's.
#include <cstring>

#include "kernels/cpu/quant.h"

namespace prima::kernels {

namespace {
std::uint32_t bits(float f) {
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
float from_bits(std::uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

float fp16_to_fp32(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t(h & 0x8000) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1f;
  std::uint32_t mant = h & 0x3ff;
  if (exp == 0) {
    if (mant == 0) return from_bits(sign);
    // Subnormal: normalise.
    int e = -1;
    do {
      ++e;
      mant <<= 1;
    } while ((mant & 0x400) == 0);
    mant &= 0x3ff;
    return from_bits(sign | std::uint32_t(127 - 15 - e) << 23 | mant << 13);
  }
  if (exp == 0x1f) return from_bits(sign | 0x7f800000u | mant << 13);  // inf / nan
  return from_bits(sign | (exp + 127 - 15) << 23 | mant << 13);
}

std::uint16_t fp32_to_fp16(float f) {
  const std::uint32_t x = bits(f);
  const std::uint32_t sign = (x >> 16) & 0x8000;
  const std::uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return std::uint16_t(sign | 0x7c00 | (abs > 0x7f800000u ? 0x200 : 0));
  if (abs >= 0x477ff000u) return std::uint16_t(sign | 0x7c00);  // rounds to >= 65520: inf
  if (abs < 0x38800000u) {
    // Subnormal or zero in half: value = abs * 2^24 rounded to nearest even.
    const float v = from_bits(abs) * 16777216.0f;  // exact scaling
    std::uint32_t m = static_cast<std::uint32_t>(v);
    const float rem = v - static_cast<float>(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1))) ++m;
    return std::uint16_t(sign | m);
  }
  // Normal: rebias the exponent, round the mantissa to 10 bits (nearest even).
  std::uint32_t h = ((abs >> 13) - ((127 - 15) << 10));
  const std::uint32_t rest = abs & 0x1fff;
  if (rest > 0x1000 || (rest == 0x1000 && (h & 1))) ++h;
  return std::uint16_t(sign | h);
}

float bf16_to_fp32(std::uint16_t h) {
  return from_bits(std::uint32_t(h) << 16);
}

std::uint16_t fp32_to_bf16(float f) {
  std::uint32_t x = bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return std::uint16_t((x >> 16) | 64);  // quiet nan
  x += 0x7fff + ((x >> 16) & 1);  // round to nearest even
  return std::uint16_t(x >> 16);
}

}  // namespace prima::kernels
