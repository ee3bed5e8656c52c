// Element-wise and per-row operators of the Llama forward pass (RMSNorm, RoPE, softmax,
// SwiGLU, residual add), with llama.cpp's CPU numerics. Stateless; thread-safe.
#include "kernels/cpu/ops.h"

#include <cmath>
#include <vector>

namespace prima::kernels {

void rms_norm(const float* x, const float* w, std::int64_t n, float eps, float* out) {
  double sum = 0.0;
  for (std::int64_t i = 0; i < n; ++i) sum += double(x[i]) * double(x[i]);
  const float mean = static_cast<float>(sum / double(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (std::int64_t i = 0; i < n; ++i) out[i] = (x[i] * scale) * w[i];
}

void rope(float* x, int n_heads, int head_dim, int rot_dims, std::int64_t pos, float freq_base) {
  const int pairs = rot_dims / 2;
  // Angles once per token, shared by all heads; stepped by multiplication as llama.cpp does.
  float cs[256], sn[256];
  std::vector<float> big;
  float* c = cs;
  float* s = sn;
  if (pairs > 256) {
    big.resize(std::size_t(pairs) * 2);
    c = big.data();
    s = big.data() + pairs;
  }
  const float theta_scale = std::pow(freq_base, -2.0f / float(rot_dims));
  float theta = static_cast<float>(pos);
  for (int i = 0; i < pairs; ++i) {
    c[i] = std::cos(theta);
    s[i] = std::sin(theta);
    theta *= theta_scale;
  }
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + std::int64_t(h) * head_dim;
    for (int i = 0; i < pairs; ++i) {
      const float x0 = v[2 * i], x1 = v[2 * i + 1];
      v[2 * i] = x0 * c[i] - x1 * s[i];
      v[2 * i + 1] = x0 * s[i] + x1 * c[i];
    }
  }
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

void silu_mul(const float* gate, const float* up, std::int64_t n, float* out) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = gate[i];
    out[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void add_inplace(float* y, const float* x, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) y[i] += x[i];
}

}  // namespace prima::kernels
