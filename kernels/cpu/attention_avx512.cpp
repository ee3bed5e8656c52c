// Decode attention (one query row, llama.cpp's kVec64 dot order) in 512-bit registers:
// kq_rows and pv_rows of attention_kernels.h. Bit for bit the AVX2 / portable kq, pv and fold:
// the same products, the same per-lane fma chains in position order, the same fold and
// reduce16 trees; only where the partial sums live changes (registers instead of a 64 x
// head_dim array in memory that had to be zeroed, loaded and stored per position and folded).
// The target is set here by pragma; only called after the run-time CPU check. Stateless;
// thread-safe.
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512dq,avx512bw")
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands from
// self-initialised locals, which -Wmaybe-uninitialized reports (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/cpu/attention_kernels.h"

namespace prima::kernels::detail {

namespace {

inline __m512 load_h16(const std::uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

// The AVX2 kernels' hsum: ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)).
inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// kq's fold of its 64 lanes (a0: lanes 0-15, ..., a3: lanes 48-63): lanes (t, t + 32, t + 16,
// t + 48) as (a + c) + (b + d), the 16 sums as 8 + 8 (upper half + lower half), then hsum.
inline float fold64(__m512 a0, __m512 a1, __m512 a2, __m512 a3) {
  const __m512 g = _mm512_add_ps(_mm512_add_ps(a0, a2), _mm512_add_ps(a1, a3));
  const __m256 lo = _mm512_castps512_ps256(g);
  const __m256 hi = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(g), 1));
  return hsum(_mm256_add_ps(hi, lo));
}

// Lane m of the 64 (m < 64) holds elements m, m + 64, ... of the row: for 64-element chunks
// c, register i holds lanes 16i .. 16i + 15 and accumulates chunk c's elements 16i .. 16i + 15
// with fma (the first chunk into zero, as kq's fma into zeroed accumulators); then fold64.
void kq_rows(const float* q, const std::uint16_t* const* k_rows, int len, int d, float scale,
             float* scores) {
  const int chunks = d / 64;
  if (chunks == 1) {
    const __m512 q0 = _mm512_loadu_ps(q), q1 = _mm512_loadu_ps(q + 16),
                 q2 = _mm512_loadu_ps(q + 32), q3 = _mm512_loadu_ps(q + 48);
    const __m512 zero = _mm512_setzero_ps();
    for (int i = 0; i < len; ++i) {
      const std::uint16_t* k = k_rows[i];
      if (i + 8 < len) {  // rows of paged blocks: the hardware prefetcher misses block changes
        _mm_prefetch(reinterpret_cast<const char*>(k_rows[i + 8]), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(k_rows[i + 8] + 32), _MM_HINT_T0);
      }
      const __m512 a0 = _mm512_fmadd_ps(load_h16(k), q0, zero);
      const __m512 a1 = _mm512_fmadd_ps(load_h16(k + 16), q1, zero);
      const __m512 a2 = _mm512_fmadd_ps(load_h16(k + 32), q2, zero);
      const __m512 a3 = _mm512_fmadd_ps(load_h16(k + 48), q3, zero);
      scores[i] = fold64(a0, a1, a2, a3) * scale;
    }
    return;
  }
  for (int i = 0; i < len; ++i) {
    const std::uint16_t* k = k_rows[i];
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (int c = 0; c < chunks; ++c) {
      const std::uint16_t* kc = k + 64 * c;
      const float* qc = q + 64 * c;
      a0 = _mm512_fmadd_ps(load_h16(kc), _mm512_loadu_ps(qc), a0);
      a1 = _mm512_fmadd_ps(load_h16(kc + 16), _mm512_loadu_ps(qc + 16), a1);
      a2 = _mm512_fmadd_ps(load_h16(kc + 32), _mm512_loadu_ps(qc + 32), a2);
      a3 = _mm512_fmadd_ps(load_h16(kc + 48), _mm512_loadu_ps(qc + 48), a3);
    }
    scores[i] = fold64(a0, a1, a2, a3) * scale;
  }
}

// One lane's 64 outputs of a chunk in four registers.
struct Lane {
  __m512 r0, r1, r2, r3;
};

inline Lane lane_add(const Lane& a, const Lane& b) {
  return {_mm512_add_ps(a.r0, b.r0), _mm512_add_ps(a.r1, b.r1), _mm512_add_ps(a.r2, b.r2),
          _mm512_add_ps(a.r3, b.r3)};
}

inline void lane_fma(Lane& a, const std::uint16_t* v, float p) {
  const __m512 w = _mm512_set1_ps(p);
  a.r0 = _mm512_fmadd_ps(load_h16(v), w, a.r0);
  a.r1 = _mm512_fmadd_ps(load_h16(v + 16), w, a.r1);
  a.r2 = _mm512_fmadd_ps(load_h16(v + 32), w, a.r2);
  a.r3 = _mm512_fmadd_ps(load_h16(v + 48), w, a.r3);
}

inline void lane_store(float* out, const Lane& a) {
  _mm512_storeu_ps(out, a.r0);
  _mm512_storeu_ps(out + 16, a.r1);
  _mm512_storeu_ps(out + 32, a.r2);
  _mm512_storeu_ps(out + 48, a.r3);
}

inline Lane lane_load(const float* in) {
  return {_mm512_loadu_ps(in), _mm512_loadu_ps(in + 16), _mm512_loadu_ps(in + 32),
          _mm512_loadu_ps(in + 48)};
}

// pv + fold for 64 lanes: lane m sums positions m, m + 64, ... in order (one fma each, from
// zero), g_l = (lane l + lane l+32) + (lane l+16 + lane l+48), out = reduce16(g) per output.
// The four lanes of each g_l are computed together (16 independent fma chains), g_l kept in
// a 16 x 64 scratch (4 KiB, L1), then reduced as the AVX2 fold does.
void pv_rows(const float* p, const std::uint16_t* const* v_rows, int len, int d, float* out) {
  alignas(64) float g[16][64];
  for (int c = 0; c < d / 64; ++c) {
    const int off = 64 * c;
    for (int l = 0; l < 16; ++l) {
      const __m512 z = _mm512_setzero_ps();
      Lane a{z, z, z, z}, b = a, e = a, f = a;  // lanes l, l + 16, l + 32, l + 48
      // Rounds k: positions l + 64k, l + 16 + 64k, l + 32 + 64k, l + 48 + 64k (each lane's
      // positions in order; a lane past the end of the context takes no more).
      for (int base = l; base < len; base += 64) {
        lane_fma(a, v_rows[base] + off, p[base]);
        if (base + 16 < len) lane_fma(b, v_rows[base + 16] + off, p[base + 16]);
        if (base + 32 < len) lane_fma(e, v_rows[base + 32] + off, p[base + 32]);
        if (base + 48 < len) lane_fma(f, v_rows[base + 48] + off, p[base + 48]);
      }
      lane_store(g[l], lane_add(lane_add(a, e), lane_add(b, f)));
    }
    // reduce16 over g_0 .. g_15 for all 64 outputs: e_i = g_{i+8} + g_i, f_i = e_{i+4} + e_i,
    // out = (f_0 + f_2) + (f_1 + f_3).
    Lane ee[8];
    for (int i = 0; i < 8; ++i) ee[i] = lane_add(lane_load(g[i + 8]), lane_load(g[i]));
    Lane ff[4];
    for (int i = 0; i < 4; ++i) ff[i] = lane_add(ee[i + 4], ee[i]);
    lane_store(out + off, lane_add(lane_add(ff[0], ff[2]), lane_add(ff[1], ff[3])));
  }
}

}  // namespace

bool cpu_has_avx512_attention() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
         __builtin_cpu_supports("f16c") && __builtin_cpu_supports("avx512f") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512bw");
#else
  return false;
#endif
}

const AttentionKernels& attention_avx512_kernels() {
  static const AttentionKernels k = [] {
    AttentionKernels s = attention_avx2_kernels();
    s.isa = "avx512";
    s.kq_rows = &kq_rows;
    s.pv_rows = &pv_rows;
    return s;
  }();
  return k;
}

}  // namespace prima::kernels::detail
