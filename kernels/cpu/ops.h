// Element-wise and per-row operators of the Llama forward pass, in float, bit for bit
// llama.cpp's CPU ops (float squares summed in double for RMSNorm; RoPE angles from
// theta_scale = powf(base, -2/d) stepped by multiplication, rotations with one fused product;
// SwiGLU with llama.cpp's vector exponential). Stateless; thread-safe.
#pragma once

#include <cstdint>

namespace prima::kernels {

// out[i] = x[i] / sqrt(mean(x^2) + eps) * w[i] over rows of n (out may alias x).
void rms_norm(const float* x, const float* w, std::int64_t n, float eps, float* out);

// Rotary embedding in place on one token's heads: x is n_heads x head_dim; rotates the
// first rot_dims dims of each head in adjacent pairs (x[2i], x[2i+1]) by pos * base^(-2i/rot)
// (llama.cpp's "normal" RoPE, the llama architecture's layout after its converter's
// permutation).
void rope(float* x, int n_heads, int head_dim, int rot_dims, std::int64_t pos, float freq_base);
// rope() of one token's queries (q_heads heads) and keys (k_heads heads) at the same position,
// the angles computed once; the same values as two rope() calls.
void rope_qk(float* q, int q_heads, float* k, int k_heads, int head_dim, int rot_dims,
             std::int64_t pos, float freq_base);

// In place softmax over n values.
void softmax(float* x, std::int64_t n);

// out[i] = silu(gate[i]) * up[i] (SwiGLU) over rows of `row` values (0: one row of n); out
// may alias gate. As llama.cpp: silu(g) = g / (1 + vexp(-g)) for the first row / 16 * 16
// values of each row, with libm's expf for the rest.
void silu_mul(const float* gate, const float* up, std::int64_t n, float* out, std::int64_t row = 0);

// y[i] += x[i].
void add_inplace(float* y, const float* x, std::int64_t n);

}  // namespace prima::kernels
