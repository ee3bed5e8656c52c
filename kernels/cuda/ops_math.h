// The per-row and per-element math of the Llama forward pass's operators on host and device
// (PRIMA_HD), the same operations as kernels/cpu/ops.cpp:
//   RMSNorm: scale = 1 / sqrt(float(sum(x^2) / n) + eps), out = (x * scale) * w;
//   RoPE: theta_i = pos * theta_scale^i (stepped by multiplication, theta_scale =
//         powf(base, -2 / rot_dims)); (x0, x1) -> (fma(x0, c, -(x1 s)), fma(x0, s, x1 c));
//   SwiGLU: silu(g) * u = g / (1 + vexp(-g)) * u with llama.cpp's vector exponential.
// The host side holds these to kernels/cpu bit for bit (tests/kernels/cuda/); device
// kernels use them with their own reduction orders and cosf/sinf. Header only.
#pragma once

#include <cmath>
#include <cstdint>

#include "kernels/cuda/host_device.h"

namespace prima::cuda {

// RMSNorm's scale of a row of n values whose squares sum to sum_sq.
PRIMA_HD float rms_scale(double sum_sq, std::int64_t n, float eps) {
  const float mean = static_cast<float>(sum_sq / double(n));
  return 1.0f / sqrtf(mean + eps);
}
PRIMA_HD float rms_apply(float x, float scale, float w) {
  return (x * scale) * w;
}

// RoPE: theta_scale of a head's rot_dims rotated dims, and pair i's angle at position pos.
PRIMA_HD float rope_theta_scale(float freq_base, int rot_dims) {
  return powf(freq_base, -2.0f / float(rot_dims));
}
PRIMA_HD float rope_theta(std::int64_t pos, int pair, float theta_scale) {
  float theta = static_cast<float>(pos);
  for (int i = 0; i < pair; ++i) theta *= theta_scale;
  return theta;
}
// Rotates the pair (*x0, *x1) by the angle whose cosine and sine are c and s.
PRIMA_HD void rope_rotate_pair(float* x0, float* x1, float c, float s) {
  const float a = *x0, b = *x1;
  *x0 = fmaf(a, c, -(b * s));
  *x1 = fmaf(a, s, b * c);
}

// llama.cpp's vector exponential (kernels/cpu/ops_kernels.h), scalar.
PRIMA_HD float vexp(float x) {
  const float r = 0x1.8p23f;
  const float z = fmaf(x, 0x1.715476p+0f, r);
  const float n = z - r;
  const float b = fmaf(-n, 0x1.7f7d1cp-20f, fmaf(-n, 0x1.62e4p-1f, x));
  if (fabsf(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;
  const float u = b * b;
  const float j = fmaf(
      fmaf(fmaf(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u, fmaf(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)), u,
      fmaf(0x1.ffffecp-1f, b, 1.0f));
  return ldexpf(j, static_cast<int>(n));  // j * 2^n, rounded once
}

PRIMA_HD float swiglu(float gate, float up) {
  return gate / (1.0f + vexp(0.0f - gate)) * up;
}

}  // namespace prima::cuda
