// The values of a synthetic model's weights (backends/real/synthetic_model.h), on host and
// device (PRIMA_HD), so the file written on the host and the weights made on a device are the
// same bits: element (row, col) of tensor `tensor` is a splitmix64 draw (a counter-based
// generator: element col's state is the row's state plus (col + 1) times the increment, so
// any element is computed alone), mapped to a uniform in [mean - half_width, mean + half_width).
// The device side multiplies and adds with __fmul_rn / __fadd_rn: nvcc would otherwise fuse
// them, and the host (x86-64 without FMA in these files) rounds each. Header only; no state.
#pragma once

#include <cstdint>

#include "kernels/cuda/host_device.h"

namespace prima::cuda {

inline constexpr std::uint64_t kSplitmixGamma = 0x9E3779B97F4A7C15ull;

PRIMA_HD std::uint64_t splitmix_mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// The state a row's first element is drawn after (one draw of the row's seed is discarded).
PRIMA_HD std::uint64_t synthetic_row_state(std::uint64_t seed, std::uint64_t tensor,
                                           std::uint64_t row) {
  return ((seed * kSplitmixGamma) ^ (tensor << 40) ^ row) + kSplitmixGamma;
}

PRIMA_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

PRIMA_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}

// Element `col` of the row whose state is `row_state`.
PRIMA_HD float synthetic_value(std::uint64_t row_state, std::int64_t col, float half_width,
                               float mean) {
  const std::uint64_t z = splitmix_mix(row_state + std::uint64_t(col + 1) * kSplitmixGamma);
  const double u = double(z >> 11) * 0x1.0p-53;  // [0, 1)
  return add_rn(mean, mul_rn(half_width, float(2 * u - 1)));
}

}  // namespace prima::cuda
