// Internal to kernels/cpu: the per-ISA element-wise loops that need llama.cpp's vector
// exponential (SwiGLU and the attention softmax), exposed so tests can hold the portable and
// AVX2 versions to each other. Stateless; thread-safe.
//
// llama.cpp's vector expf (an Arm optimized-routines polynomial, AVX-512 form, which is what
// its x86 CPU backend runs on AVX-512 machines): with r = 0x1.8p23,
//   z = fma(x, log2(e), r); n = z - r; b = x - n ln2_hi - n ln2_lo (two fnmadds);
//   j = fma(fma(fma(c4, b, c3), b^2, fma(c2, b, c1)), b^2, fma(c0, b, 1)); exp = j * 2^n
// (one rounding); |n| > 192 gives 0 (n <= 0) or +inf. vexp() below computes exactly that in
// scalar code (std::fma); the AVX2 version forms 2^n as two exact powers of two so that the
// product is rounded once, as VSCALEFPS does.
#pragma once

#include <cstdint>

namespace prima::kernels::detail {

// Scalar vexp (bit for bit the vector versions).
float vexp(float x);

// The sum of 16 values in the order GCC's _mm512_reduce_add_ps adds them:
// e_i = a[i] + a[i+8], f_i = e_i + e_{i+4}, (f0 + f2) + (f1 + f3).
inline float reduce16(const float* a) {
  float e[8], f[4];
  for (int i = 0; i < 8; ++i) e[i] = a[i + 8] + a[i];
  for (int i = 0; i < 4; ++i) f[i] = e[i + 4] + e[i];
  return (f[0] + f[2]) + (f[1] + f[3]);
}

struct OpsKernels {
  const char* isa;
  // out[i] = gate[i] / (1 + vexp(-gate[i])) * up[i] for i < n (out may alias gate or up).
  void (*silu_mul_vexp)(const float* gate, const float* up, std::int64_t n, float* out);
  // x[i] = vexp(x[i] - max) for i < n; returns the sum as llama.cpp's softmax forms it: each
  // group of 16 values from x[0] summed by reduce16 in float (missing values of the last group
  // count as 0), the groups added in double.
  double (*exp_sum)(float* x, std::int64_t n, float max);
  // RoPE's rotation of the first rot_dims dims of each of n_heads heads (head_dim apart) in
  // adjacent pairs: x[2i] = fma(x0, c_i, -(x1 * s_i)), x[2i+1] = fma(x0, s_i, x1 * c_i), with
  // cc[2i] = cc[2i+1] = c_i and ss likewise (the angles' cosines and sines, each twice).
  void (*rope_rotate)(float* x, int n_heads, int head_dim, int rot_dims, const float* cc,
                      const float* ss);
};

const OpsKernels& ops_portable_kernels();
// Only valid on a CPU with AVX2 and FMA.
const OpsKernels& ops_avx2_kernels();
// The set chosen for this process (AVX2 when the CPU has it, unless PRIMA_KERNELS=portable).
const OpsKernels& active_ops_kernels();

}  // namespace prima::kernels::detail
