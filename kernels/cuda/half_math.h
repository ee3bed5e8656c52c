// IEEE binary16 and bfloat16 to float on host and device (PRIMA_HD): the same bits as
// kernels/cpu's fp16_to_fp32 / bf16_to_fp32, written with integer operations only, so a GGUF
// block's scales decode identically on both sides. Header only; no state.
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

}  // namespace prima::cuda
