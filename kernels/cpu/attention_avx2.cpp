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

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

void kq(const float* q, const std::uint16_t* k, std::int64_t stride, int count, int d, float scale,
        float* scores) {
  const int d8 = d & ~7;
  for (int i = 0; i < count; ++i) {
    const std::uint16_t* kr = k + i * stride;
    __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
    int j = 0;
    for (; j + 16 <= d8; j += 16) {
      a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + j), load_h8(kr + j), a0);
      a1 = _mm256_fmadd_ps(_mm256_loadu_ps(q + j + 8), load_h8(kr + j + 8), a1);
    }
    for (; j < d8; j += 8) a0 = _mm256_fmadd_ps(_mm256_loadu_ps(q + j), load_h8(kr + j), a0);
    float s = hsum(_mm256_add_ps(a0, a1));
    for (; j < d; ++j) s += q[j] * _cvtsh_ss(kr[j]);
    scores[i] = s * scale;
  }
}

void pv(const float* p, const std::uint16_t* v, std::int64_t stride, int count, int d, float* out) {
  int j = 0;
  // Output kept in registers 32 dims at a time across the block's positions.
  for (; j + 32 <= d; j += 32) {
    __m256 o0 = _mm256_loadu_ps(out + j), o1 = _mm256_loadu_ps(out + j + 8);
    __m256 o2 = _mm256_loadu_ps(out + j + 16), o3 = _mm256_loadu_ps(out + j + 24);
    for (int i = 0; i < count; ++i) {
      const std::uint16_t* vr = v + i * stride + j;
      const __m256 w = _mm256_set1_ps(p[i]);
      o0 = _mm256_fmadd_ps(w, load_h8(vr), o0);
      o1 = _mm256_fmadd_ps(w, load_h8(vr + 8), o1);
      o2 = _mm256_fmadd_ps(w, load_h8(vr + 16), o2);
      o3 = _mm256_fmadd_ps(w, load_h8(vr + 24), o3);
    }
    _mm256_storeu_ps(out + j, o0);
    _mm256_storeu_ps(out + j + 8, o1);
    _mm256_storeu_ps(out + j + 16, o2);
    _mm256_storeu_ps(out + j + 24, o3);
  }
  for (; j + 8 <= d; j += 8) {
    __m256 o = _mm256_loadu_ps(out + j);
    for (int i = 0; i < count; ++i)
      o = _mm256_fmadd_ps(_mm256_set1_ps(p[i]), load_h8(v + i * stride + j), o);
    _mm256_storeu_ps(out + j, o);
  }
  for (; j < d; ++j)
    for (int i = 0; i < count; ++i) out[j] += p[i] * _cvtsh_ss(v[i * stride + j]);
}

}  // namespace

const AttentionKernels& attention_avx2_kernels() {
  static const AttentionKernels k{"avx2", &kq, &pv};
  return k;
}

}  // namespace prima::kernels::detail
