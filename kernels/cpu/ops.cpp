// Element-wise and per-row operators of the Llama forward pass (RMSNorm, RoPE, softmax,
// SwiGLU, residual add), bit for bit llama.cpp's CPU numerics (see docs/kernels.md). The loops
// that use llama.cpp's vector exponential have per-ISA versions (ops_kernels.h); the rest is
// plain C++ with explicit std::fma where llama.cpp's build contracts a multiply-add.
// Stateless; thread-safe.
#include "kernels/cpu/ops.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cpu/ops_kernels.h"

namespace prima::kernels {

namespace detail {

float vexp(float x) {
  const float r = 0x1.8p23f;
  const float z = std::fma(x, 0x1.715476p+0f, r);
  const float n = z - r;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  if (std::fabs(n) > 192.0f) return n <= 0.0f ? 0.0f : INFINITY;
  const float u = b * b;
  const float j = std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                                    std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                           u, std::fma(0x1.ffffecp-1f, b, 1.0f));
  return std::ldexp(j, static_cast<int>(n));  // j * 2^n, rounded once
}

namespace {

void rope_rotate_portable(float* x, int n_heads, int head_dim, int rot_dims, const float* cc,
                          const float* ss) {
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + std::int64_t(h) * head_dim;
    for (int j = 0; j + 1 < rot_dims; j += 2) {
      const float x0 = v[j], x1 = v[j + 1];
      // x0 c - x1 s and x0 s + x1 c with the first product fused, as llama.cpp's build
      // contracts them.
      v[j] = std::fma(x0, cc[j], -(x1 * ss[j]));
      v[j + 1] = std::fma(x0, ss[j], x1 * cc[j]);
    }
  }
}

void silu_mul_vexp_portable(const float* gate, const float* up, std::int64_t n, float* out) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = gate[i] / (1.0f + vexp(0.0f - gate[i])) * up[i];
}

double exp_sum_portable(float* x, std::int64_t n, float max) {
  double sum = 0.0;
  for (std::int64_t i = 0; i < n; i += 16) {
    float g[16] = {};
    for (std::int64_t k = i; k < n && k < i + 16; ++k) g[k - i] = x[k] = vexp(x[k] - max);
    sum += double(reduce16(g));
  }
  return sum;
}

}  // namespace

const OpsKernels& ops_portable_kernels() {
  static const OpsKernels k{"portable", &silu_mul_vexp_portable, &exp_sum_portable,
                            &rope_rotate_portable};
  return k;
}

const OpsKernels& active_ops_kernels() {
  static const OpsKernels* k = [] {
    const char* env = std::getenv("PRIMA_KERNELS");
    const bool force_portable = env != nullptr && std::strcmp(env, "portable") == 0;
#if defined(__x86_64__) || defined(__i386__)
    if (!force_portable && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      return &ops_avx2_kernels();
#else
    (void)force_portable;
#endif
    return &ops_portable_kernels();
  }();
  return *k;
}

}  // namespace detail

void rms_norm(const float* x, const float* w, std::int64_t n, float eps, float* out) {
  double sum = 0.0;
  for (std::int64_t i = 0; i < n; ++i) sum += double(x[i] * x[i]);  // float square, double sum
  const float mean = static_cast<float>(sum / double(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (std::int64_t i = 0; i < n; ++i) out[i] = (x[i] * scale) * w[i];
}

namespace {

// RoPE angles of one position, each cosine and sine twice (cc, ss: 2 * pairs floats);
// stepped by multiplication as llama.cpp does.
void rope_angles(int pairs, int rot_dims, std::int64_t pos, float freq_base, float* cc, float* ss) {
  const float theta_scale = std::pow(freq_base, -2.0f / float(rot_dims));
  float theta = static_cast<float>(pos);
  for (int i = 0; i < pairs; ++i) {
    cc[2 * i] = cc[2 * i + 1] = std::cos(theta);
    ss[2 * i] = ss[2 * i + 1] = std::sin(theta);
    theta *= theta_scale;
  }
}

// Angles once per token, shared by every head of both tensors (k may be null).
void rope_heads(float* q, int q_heads, float* k, int k_heads, int head_dim, int rot_dims,
                std::int64_t pos, float freq_base) {
  const int pairs = rot_dims / 2;
  float small[2][512];
  std::vector<float> big;
  float* cc = small[0];
  float* ss = small[1];
  if (pairs > 256) {
    big.resize(std::size_t(pairs) * 4);
    cc = big.data();
    ss = big.data() + 2 * pairs;
  }
  rope_angles(pairs, rot_dims, pos, freq_base, cc, ss);
  const auto& ok = detail::active_ops_kernels();
  ok.rope_rotate(q, q_heads, head_dim, rot_dims, cc, ss);
  if (k != nullptr) ok.rope_rotate(k, k_heads, head_dim, rot_dims, cc, ss);
}

}  // namespace

void rope(float* x, int n_heads, int head_dim, int rot_dims, std::int64_t pos, float freq_base) {
  rope_heads(x, n_heads, nullptr, 0, head_dim, rot_dims, pos, freq_base);
}

void rope_qk(float* q, int q_heads, float* k, int k_heads, int head_dim, int rot_dims,
             std::int64_t pos, float freq_base) {
  rope_heads(q, q_heads, k, k_heads, head_dim, rot_dims, pos, freq_base);
}

void softmax(float* x, std::int64_t n) {
  if (n <= 0) return;
  float max = -INFINITY;
  for (std::int64_t i = 0; i < n; ++i) max = x[i] > max ? x[i] : max;
  double sum = 0.0;
  for (std::int64_t i = 0; i < n; ++i) {
    const float e = std::exp(x[i] - max);
    x[i] = e;
    sum += e;
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (std::int64_t i = 0; i < n; ++i) x[i] *= inv;
}

void silu_mul(const float* gate, const float* up, std::int64_t n, float* out, std::int64_t row) {
  if (row <= 0) row = n;
  const auto& k = detail::active_ops_kernels();
  const std::int64_t vec = row / 16 * 16;  // llama.cpp's vector part of each row
  for (std::int64_t r0 = 0; r0 < n; r0 += row) {
    const std::int64_t len = n - r0 < row ? n - r0 : row;
    const std::int64_t v = len < vec ? len : vec;
    k.silu_mul_vexp(gate + r0, up + r0, v, out + r0);
    for (std::int64_t i = r0 + v; i < r0 + len; ++i)  // the row's tail: libm expf
      out[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
  }
}

void add_inplace(float* y, const float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace prima::kernels
