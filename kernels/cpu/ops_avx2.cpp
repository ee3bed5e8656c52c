// AVX2/FMA versions of the vexp loops (see ops_kernels.h), 8 lanes at a time. Compiled with
// -mavx2 -mfma; only called after the run-time CPU check. Stateless; thread-safe.
#include <immintrin.h>

#include "kernels/cpu/ops_kernels.h"

namespace prima::kernels::detail {

namespace {

inline __m256 vexp8(__m256 x) {
  const __m256 r = _mm256_set1_ps(0x1.8p23f);
  const __m256 z = _mm256_fmadd_ps(x, _mm256_set1_ps(0x1.715476p+0f), r);
  const __m256 n = _mm256_sub_ps(z, r);
  const __m256 b = _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.7f7d1cp-20f),
                                    _mm256_fnmadd_ps(n, _mm256_set1_ps(0x1.62e4p-1f), x));
  const __m256 u = _mm256_mul_ps(b, b);
  const __m256 j = _mm256_fmadd_ps(
      _mm256_fmadd_ps(
          _mm256_fmadd_ps(_mm256_set1_ps(0x1.0e4020p-7f), b, _mm256_set1_ps(0x1.573e2ep-5f)), u,
          _mm256_fmadd_ps(_mm256_set1_ps(0x1.555e66p-3f), b, _mm256_set1_ps(0x1.fffdb6p-2f))),
      u, _mm256_fmadd_ps(_mm256_set1_ps(0x1.ffffecp-1f), b, _mm256_set1_ps(1.0f)));
  // 2^n = 2^n1 * 2^n2 with n1 = floor(n / 2): both normal for |n| <= 192, and j * 2^n1 is
  // exact, so the result is rounded once (the second product), as VSCALEFPS rounds j * 2^n.
  const __m256i ni = _mm256_cvtps_epi32(n);
  const __m256i n1 = _mm256_srai_epi32(ni, 1);
  const __m256i n2 = _mm256_sub_epi32(ni, n1);
  const __m256i bias = _mm256_set1_epi32(127);
  const __m256 p1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
  const __m256 p2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
  const __m256 res = _mm256_mul_ps(_mm256_mul_ps(j, p1), p2);
  const __m256 big =
      _mm256_cmp_ps(_mm256_andnot_ps(_mm256_set1_ps(-0.0f), n), _mm256_set1_ps(192.0f), _CMP_GT_OQ);
  if (_mm256_testz_ps(big, big)) return res;
  const __m256 alt = _mm256_blendv_ps(_mm256_set1_ps(__builtin_inff()), _mm256_setzero_ps(),
                                      _mm256_cmp_ps(n, _mm256_setzero_ps(), _CMP_LE_OQ));
  return _mm256_blendv_ps(res, alt, big);
}

// 4 pairs per register: v = [x0 x1 ...], w = the pairs swapped; the even lanes take
// fma(v, c, -(w * s)) = fma(x0, c, -(x1 s)), the odd ones fma(w, s, v * c) = fma(x0, s, x1 c):
// per element the portable kernel's operations.
void rope_rotate(float* x, int n_heads, int head_dim, int rot_dims, const float* cc,
                 const float* ss) {
  const int vec = rot_dims / 8 * 8;
  for (int h = 0; h < n_heads; ++h) {
    float* p = x + std::int64_t(h) * head_dim;
    for (int j = 0; j < vec; j += 8) {
      const __m256 v = _mm256_loadu_ps(p + j);
      const __m256 w = _mm256_permute_ps(v, 0xb1);
      const __m256 c = _mm256_loadu_ps(cc + j), s = _mm256_loadu_ps(ss + j);
      const __m256 even =
          _mm256_fmadd_ps(v, c, _mm256_xor_ps(_mm256_mul_ps(w, s), _mm256_set1_ps(-0.0f)));
      const __m256 odd = _mm256_fmadd_ps(w, s, _mm256_mul_ps(v, c));
      _mm256_storeu_ps(p + j, _mm256_blend_ps(even, odd, 0xaa));
    }
    for (int j = vec; j + 1 < rot_dims; j += 2) {
      const float x0 = p[j], x1 = p[j + 1];
      p[j] = __builtin_fmaf(x0, cc[j], -(x1 * ss[j]));
      p[j + 1] = __builtin_fmaf(x0, ss[j], x1 * cc[j]);
    }
  }
}

void silu_mul_vexp(const float* gate, const float* up, std::int64_t n, float* out) {
  std::int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = vexp8(_mm256_sub_ps(_mm256_setzero_ps(), g));
    const __m256 s = _mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(s, _mm256_loadu_ps(up + i)));
  }
  for (; i < n; ++i) out[i] = gate[i] / (1.0f + vexp(0.0f - gate[i])) * up[i];
}

inline float hsum(__m256 v) {  // ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7))
  __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(s, _mm_movehdup_ps(s)));
}

double exp_sum(float* x, std::int64_t n, float max) {
  const __m256 m = _mm256_set1_ps(max);
  double sum = 0.0;
  std::int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const __m256 lo = vexp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), m));
    const __m256 hi = vexp8(_mm256_sub_ps(_mm256_loadu_ps(x + i + 8), m));
    _mm256_storeu_ps(x + i, lo);
    _mm256_storeu_ps(x + i + 8, hi);
    sum += double(hsum(_mm256_add_ps(hi, lo)));  // reduce16: halves first, then hsum's order
  }
  if (i < n) {
    float g[16] = {};
    for (std::int64_t k = i; k < n; ++k) g[k - i] = x[k] = vexp(x[k] - max);
    sum += double(reduce16(g));
  }
  return sum;
}

}  // namespace

const OpsKernels& ops_avx2_kernels() {
  static const OpsKernels k{"avx2", &silu_mul_vexp, &exp_sum, &rope_rotate};
  return k;
}

}  // namespace prima::kernels::detail
