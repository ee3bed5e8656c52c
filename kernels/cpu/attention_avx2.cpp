// AVX2/FMA/F16C inner loops of attention (see attention_kernels.h): f16 K/V rows converted
// 8 at a time with vcvtph2ps, products accumulated with fma. Compiled with -mavx2 -mfma
// -mf16c; only called after the run-time CPU check. Stateless; thread-safe.
#include <immintrin.h>

#include "kernels/cpu/attention_kernels.h"

namespace prima::kernels::detail {

namespace {

inline __m256 load_h8(const std::uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline float hsum(__m256 v) {  // ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7))
  __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

void kq(const float* q, const std::uint16_t* k, std::int64_t stride, int count, int d, float scale,
        DotOrder order, float* scores) {
  if (order == DotOrder::kGemm16) {
    const int d16 = d & ~15;
    for (int i = 0; i < count; ++i) {
      const std::uint16_t* kr = k + i * stride;
      __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();  // lanes 0-7, 8-15
      for (int j = 0; j < d16; j += 16) {
        a0 = _mm256_fmadd_ps(load_h8(kr + j), _mm256_loadu_ps(q + j), a0);
        a1 = _mm256_fmadd_ps(load_h8(kr + j + 8), _mm256_loadu_ps(q + j + 8), a1);
      }
      float s = hsum(_mm256_add_ps(a1, a0));  // reduce16
      for (int j = d16; j < d; ++j) s += q[j] * _cvtsh_ss(kr[j]);
      scores[i] = s * scale;
    }
    return;
  }
  const int d64 = d & ~63;
  for (int i = 0; i < count; ++i) {
    const std::uint16_t* kr = k + i * stride;
    // Lanes 8m .. 8m + 7 of the 64 in a_m: eight named registers (an array here was kept on
    // the stack, zeroed with rep stos and reloaded per fma: ~5x slower).
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (int j = 0; j < d64; j += 64) {
      const std::uint16_t* kj = kr + j;
      const float* qj = q + j;
      a0 = _mm256_fmadd_ps(load_h8(kj), _mm256_loadu_ps(qj), a0);
      a1 = _mm256_fmadd_ps(load_h8(kj + 8), _mm256_loadu_ps(qj + 8), a1);
      a2 = _mm256_fmadd_ps(load_h8(kj + 16), _mm256_loadu_ps(qj + 16), a2);
      a3 = _mm256_fmadd_ps(load_h8(kj + 24), _mm256_loadu_ps(qj + 24), a3);
      a4 = _mm256_fmadd_ps(load_h8(kj + 32), _mm256_loadu_ps(qj + 32), a4);
      a5 = _mm256_fmadd_ps(load_h8(kj + 40), _mm256_loadu_ps(qj + 40), a5);
      a6 = _mm256_fmadd_ps(load_h8(kj + 48), _mm256_loadu_ps(qj + 48), a6);
      a7 = _mm256_fmadd_ps(load_h8(kj + 56), _mm256_loadu_ps(qj + 56), a7);
    }
    // (l0 + l32) + (l16 + l48) for each of the 16 lanes, then reduce16.
    const __m256 lo = _mm256_add_ps(_mm256_add_ps(a0, a4), _mm256_add_ps(a2, a6));
    const __m256 hi = _mm256_add_ps(_mm256_add_ps(a1, a5), _mm256_add_ps(a3, a7));
    double s = hsum(_mm256_add_ps(hi, lo));
    for (int j = d64; j < d; ++j) s += double(q[j] * _cvtsh_ss(kr[j]));
    scores[i] = static_cast<float>(s) * scale;
  }
}

void pv(const float* p, const std::uint16_t* v, std::int64_t stride, int count, int d,
        std::int64_t pos0, int lanes, float* acc) {
  const int d8 = d & ~7;
  for (int i = 0; i < count; ++i) {
    const std::uint16_t* vr = v + i * stride;
    float* a = acc + ((pos0 + i) % lanes) * d;
    const __m256 w = _mm256_set1_ps(p[i]);
    int j = 0;
    for (; j < d8; j += 8)
      _mm256_storeu_ps(a + j, _mm256_fmadd_ps(load_h8(vr + j), w, _mm256_loadu_ps(a + j)));
    for (; j < d; ++j) a[j] = __builtin_fmaf(_cvtsh_ss(vr[j]), p[i], a[j]);
  }
}

void fold(const float* acc, int lanes, int d, float* out) {
  const std::size_t sd = static_cast<std::size_t>(d);
  int j = 0;
  for (; j + 8 <= d; j += 8) {
    __m256 g[16];
    for (int l = 0; l < 16; ++l) {
      const float* a = acc + l * sd + j;
      g[l] = lanes == 16
                 ? _mm256_loadu_ps(a)
                 : _mm256_add_ps(
                       _mm256_add_ps(_mm256_loadu_ps(a), _mm256_loadu_ps(a + 32 * sd)),
                       _mm256_add_ps(_mm256_loadu_ps(a + 16 * sd), _mm256_loadu_ps(a + 48 * sd)));
    }
    // reduce16 for 8 outputs at once: e_i = g[i + 8] + g[i], f_i = e[i + 4] + e[i].
    __m256 e[8], f[4];
    for (int i = 0; i < 8; ++i) e[i] = _mm256_add_ps(g[i + 8], g[i]);
    for (int i = 0; i < 4; ++i) f[i] = _mm256_add_ps(e[i + 4], e[i]);
    _mm256_storeu_ps(out + j, _mm256_add_ps(_mm256_add_ps(f[0], f[2]), _mm256_add_ps(f[1], f[3])));
  }
  if (j < d) {
    // The last d % 8 outputs: the portable fold on a copy of their lanes.
    const int rest = d - j;
    float tmp[64 * 8];
    for (int l = 0; l < lanes; ++l)
      for (int c = 0; c < rest; ++c) tmp[l * rest + c] = acc[l * sd + j + c];
    fold_lanes(tmp, lanes, rest, out + j);
  }
}

void round_f16(float* x, std::int64_t n, float scale) {
  const __m256 s = _mm256_set1_ps(scale);
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(x + i,
                     _mm256_cvtph_ps(_mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(x + i), s),
                                                     _MM_FROUND_TO_NEAREST_INT)));
  for (; i < n; ++i) x[i] = _cvtsh_ss(_cvtss_sh(x[i] * scale, _MM_FROUND_TO_NEAREST_INT));
}

void to_f16(const float* x, std::uint16_t* out, std::int64_t n) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; ++i) out[i] = _cvtss_sh(x[i], _MM_FROUND_TO_NEAREST_INT);
}

}  // namespace

const AttentionKernels& attention_avx2_kernels() {
  static const AttentionKernels k{"avx2", &kq, &pv, &fold, &round_f16, &to_f16};
  return k;
}

}  // namespace prima::kernels::detail
