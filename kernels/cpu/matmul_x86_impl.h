// Internal to kernels/cpu: the x86 SIMD matmul tile kernels for Q4_0, Q4_1 and Q8_0 weights,
// included by matmul_avx2.cpp (PRIMA_X86_VNNI 0) and matmul_avxvnni.cpp (PRIMA_X86_VNNI 1,
// 8-bit products with one _mm256_dpbusd_avx_epi32 instead of maddubs + madd). Each including
// file compiles it with its own target flags; the code is in an anonymous namespace, so each
// file gets its own copy. Stateless; thread-safe (the scratch buffer is per thread). No
// standard-library templates here: their instantiations would be compiled for the SIMD target and
// could be picked by the linker for the whole program.
//
// Scheme: the activation block scales (and Q8_1 sums) are converted to float once per call;
// a micro-kernel handles one weight row (with AVX-512: up to 4) x 8 activation rows per pass (then
// NT <= 4 for the remainder), so a weight block is unpacked once for 8 tokens. Nibbles are unpacked
// with and/shift; products u8 x s8 (the sign trick for signed x signed); one fma per block into
// float accumulators.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <type_traits>

#include "kernels/cpu/matmul_kernels.h"

#ifndef PRIMA_X86_VNNI
#error "define PRIMA_X86_VNNI before including matmul_x86_impl.h"
#endif
#ifndef PRIMA_X86_AVX512
#define PRIMA_X86_AVX512 0  // 1: the 8-token kernel uses 512-bit registers (micro8_zmm)
#endif

namespace prima::kernels::detail {
namespace {

#if PRIMA_X86_VNNI
// u8 x s8 dot products of 4-byte groups added to acc: the AVX-VNNI encoding, or with AVX-512
// the EVEX one (AVX512_VNNI + VL), for CPUs that have AVX-512 VNNI but not AVX-VNNI (AMD
// Zen 4, Intel Ice Lake). The same operation either way.
inline __m256i dpbusd256(__m256i acc, __m256i u, __m256i s) {
#if PRIMA_X86_AVX512
  return _mm256_dpbusd_epi32(acc, u, s);
#else
  return _mm256_dpbusd_avx_epi32(acc, u, s);
#endif
}
#endif

inline float h2f(std::uint16_t h) {
  return _cvtsh_ss(h);
}

inline float hsum(__m256 v) {
  // ((v0 + v4) + (v2 + v6)) + ((v1 + v5) + (v3 + v7)): llama.cpp's hsum_float_8 (high half plus
  // low half, movehl, movehdup), so that a row's sum is bit for bit llama.cpp's; hsum8 gives
  // each lane the same order (batch invariance).
  __m128 r = _mm_add_ps(_mm256_extractf128_ps(v, 1), _mm256_castps256_ps128(v));
  r = _mm_add_ps(r, _mm_movehl_ps(r, r));
  return _mm_cvtss_f32(_mm_add_ss(r, _mm_movehdup_ps(r)));
}

// 32 nibbles -> 32 bytes in element order (low nibbles are elements 0..15).
inline __m256i unpack_nibbles(const std::uint8_t* qs) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m = _mm_set1_epi8(0x0f);
  return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(b, 4), m), _mm_and_si128(b, m));
}

// Sum of u8 x s8 products of 32 bytes, as 8 float partial sums.
inline __m256 dot_us(__m256i u, __m256i s) {
#if PRIMA_X86_VNNI
  return _mm256_cvtepi32_ps(dpbusd256(_mm256_setzero_si256(), u, s));
#else
  const __m256i p16 = _mm256_maddubs_epi16(u, s);
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
#endif
}

// A Q4_1 block's d and m (adjacent f16s) as floats with one conversion.
inline void dm_of(const BlockQ4_1& b, float& d, float& m) {
  int dm;
  __builtin_memcpy(&dm, &b.d, 4);
  const __m128 v = _mm_cvtph_ps(_mm_cvtsi32_si128(dm));
  d = _mm_cvtss_f32(v);
  m = _mm_cvtss_f32(_mm_movehdup_ps(v));
}

inline __m256i load32(const std::int8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Per-format weight block access: the block's 32 values as bytes for the u8 side of the
// product (`u`), how to turn the activation bytes into the s8 side (`s`), and the scales.
struct FmtQ4_1 {
  using W = BlockQ4_1;
  using X = BlockQ8_1;
  static constexpr bool kMin = true;
  static constexpr bool kOffsetX = false;
  static __m256i u(const W& b) { return unpack_nibbles(b.qs); }
  static __m256i s(__m256i x, const W&, __m256i) { return x; }
};
struct FmtQ4_0 {
  using W = BlockQ4_0;
  using X = BlockQ8_0;
  static constexpr bool kMin = false;
  // With AVX-512 the 8-token kernel takes x + 128 as the u8 side (no vpsignb on zmm).
  static constexpr bool kOffsetX = PRIMA_X86_AVX512;
  // (q - 8) signed: |q - 8| as u8, the activation takes its sign.
  static __m256i signed_w(const W& b) {
    return _mm256_sub_epi8(unpack_nibbles(b.qs), _mm256_set1_epi8(8));
  }
  static __m256i w_s8(const W& b) { return signed_w(b); }
  static __m256i u(const W& b) {
    const __m256i q = signed_w(b);
    return _mm256_sign_epi8(q, q);
  }
  static __m256i s(__m256i x, const W& b, __m256i) { return _mm256_sign_epi8(x, signed_w(b)); }
};
struct FmtQ8_0 {
  using W = BlockQ8_0;
  using X = BlockQ8_0;
  static constexpr bool kMin = false;
  // With VNNI the 8-token kernel takes x + 128 as the u8 side and the weights as they are
  // (no sign trick per token): see micro8. (maddubs would saturate: 255 x 128 x 2.)
  static constexpr bool kOffsetX = PRIMA_X86_VNNI;
  static __m256i w_s8(const W& b) { return load32(b.qs); }
  static __m256i u(const W& b) {
    const __m256i q = load32(b.qs);
    return _mm256_sign_epi8(q, q);
  }
  static __m256i s(__m256i x, const W& b, __m256i) { return _mm256_sign_epi8(x, load32(b.qs)); }
};

// Activation scales as floats: dx[t * nb + b], sx likewise (Q8_1 only); and the same values
// regrouped by 8 tokens for the 8-token kernel: dx8[(g * nb + b) * 8 + l] is token 8g + l;
// the quants too: xq8 + ((g * nb + b) * 8 + l) * 32 are the 32 bytes of token 8g + l, block b
// (one pointer and constant offsets in the kernel instead of 8 row pointers).
struct XScales {
  const float* dx;
  const float* sx;
  const float* dx8;
  const float* sx8;
  const std::int8_t* xq8;
  std::int64_t nb;
};

// Horizontal sums of 8 vectors: lane t of the result is the sum of v[t]'s lanes, in hsum's
// order: halves added (a = v0+v4, b = v1+v5, c = v2+v6, d = v3+v7), then (a + c) + (b + d).
inline __m256 hsum8(const __m256 v[8]) {
  __m256 h[4];  // h[i] = [v[2i] halves summed | v[2i+1] halves summed]: [a b c d | a' b' c' d']
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i)
    h[i] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x20),
                         _mm256_permute2f128_ps(v[2 * i], v[2 * i + 1], 0x31));
  // [a b | ...] + [c d | ...] per 128-bit lane, pairing vectors (0,1) with (2,3):
  // p = [a0+c0, b0+d0, a2+c2, b2+d2 | a1+c1, b1+d1, a3+c3, b3+d3]
  const __m256 p = _mm256_add_ps(
      _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(h[0]), _mm256_castps_pd(h[1]))),
      _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(h[0]), _mm256_castps_pd(h[1]))));
  const __m256 q = _mm256_add_ps(
      _mm256_castpd_ps(_mm256_unpacklo_pd(_mm256_castps_pd(h[2]), _mm256_castps_pd(h[3]))),
      _mm256_castpd_ps(_mm256_unpackhi_pd(_mm256_castps_pd(h[2]), _mm256_castps_pd(h[3]))));
  // hadd: [p0+p1, p2+p3, q0+q1, q2+q3 | p4+p5, p6+p7, q4+q5, q6+q7] = tokens [0 2 4 6 | 1 3 5 7]
  const __m256 r = _mm256_hadd_ps(p, q);
  return _mm256_permutevar8x32_ps(r, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

#if PRIMA_X86_AVX512
// micro8 with 512-bit registers: two tokens per register (lanes 0-7 token 2p, 8-15 token
// 2p + 1), so one dpbusd, one conversion and one fma serve two tokens. Each token's lanes see
// the same integer sums and the same fma sequence as in micro8: bit for bit its results.
// The weights are the s8 side and x + 128 the u8 side for the signed formats (kOffsetX).
// NR weight rows (ws bytes apart) per pass share each activation load; out[r * 8 + t].
template <typename F, int NR>
__attribute__((always_inline)) inline void micro8_zmm(const std::uint8_t* w, std::size_t ws,
                                                      const XScales& sc, std::int64_t t0,
                                                      float* out) {
  using W = typename F::W;
  const std::int64_t nb = sc.nb;
  const std::int8_t* xq = sc.xq8 + (t0 / 8) * nb * 256;
  const float* dx8 = sc.dx8 + (t0 / 8) * nb * 8;
  const float* sx8 = F::kMin ? sc.sx8 + (t0 / 8) * nb * 8 : nullptr;
  __m512 acc[NR][4];
  __m512i pick[4];  // token 2p's scale in lanes 0-7, token 2p + 1's in lanes 8-15
#pragma GCC unroll 4
  for (int p = 0; p < 4; ++p) {
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) acc[r][p] = _mm512_setzero_ps();
    pick[p] = _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_set1_epi32(2 * p)),
                                 _mm256_set1_epi32(2 * p + 1), 1);
  }
  __m256 accm[NR];
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) accm[r] = _mm256_setzero_ps();
  // Per 16-bit word: 0 in 128-bit lanes 0 and 2, 4 in lanes 1 and 3.
  constexpr long long k4 = 0x0004000400040004LL;
  const __m512i nib_shift = _mm512_set_epi64(k4, k4, 0, 0, k4, k4, 0, 0);
  const __m512i nib_mask = _mm512_set1_epi8(0x0f);
  for (std::int64_t b = 0; b < nb; ++b) {
    __m512 s[NR];
    __m512i wz[NR], init[NR];
#pragma GCC unroll 4
    for (int r = 0; r < NR; ++r) {
      const W* wb = reinterpret_cast<const W*>(w + r * ws) + b;
      float dw, mw = 0.0f;
      if constexpr (F::kMin)
        dm_of(*wb, dw, mw);
      else
        dw = h2f(wb->d);
      s[r] =
          _mm512_zextps256_ps512(_mm256_mul_ps(_mm256_set1_ps(dw), _mm256_loadu_ps(dx8 + b * 8)));
      if constexpr (F::kMin)
        accm[r] = _mm256_fmadd_ps(_mm256_set1_ps(mw), _mm256_loadu_ps(sx8 + b * 8), accm[r]);
      if constexpr (F::kOffsetX && std::is_same_v<F, FmtQ8_0>) {
        // x + 128 (u8) times w (s8): each lane starts at -128 * sum(w) of its 4 bytes. The
        // 32 weight bytes broadcast to both halves by the load, the start values in 512 bits:
        // two operations instead of four.
        wz[r] = _mm512_broadcast_i64x4(load32(wb->qs));
        const __m512i zero = _mm512_setzero_si512();
        init[r] = _mm512_sub_epi32(zero, _mm512_dpbusd_epi32(zero, _mm512_set1_epi8(-128), wz[r]));
      } else if constexpr (F::kOffsetX) {
        // x + 128 (u8) times w (s8): each lane starts at -128 * sum(w) of its 4 bytes.
        const __m256i wq = F::w_s8(*wb);
        const __m256i zero = _mm256_setzero_si256();
        const __m256i i8 = _mm256_sub_epi32(zero, dpbusd256(zero, _mm256_set1_epi8(-128), wq));
        wz[r] = _mm512_inserti64x4(_mm512_zextsi256_si512(wq), wq, 1);
        init[r] = _mm512_inserti64x4(_mm512_zextsi256_si512(i8), i8, 1);
      } else if constexpr (std::is_same_v<F, FmtQ4_1>) {
        // u (low nibbles, then high nibbles) in both halves straight from the 16 bytes: the
        // bytes in all four 128-bit lanes, lanes 1 and 3 shifted right by 4, masked (the same
        // bytes as unpack_nibbles, two operations instead of five).
        const __m512i q =
            _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(wb->qs)));
        wz[r] = _mm512_and_si512(_mm512_srlv_epi16(q, nib_shift), nib_mask);
        init[r] = _mm512_setzero_si512();
      } else {
        const __m256i u = F::u(*wb);
        wz[r] = _mm512_inserti64x4(_mm512_zextsi256_si512(u), u, 1);
        init[r] = _mm512_setzero_si512();
      }
    }
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      const __m512i x = _mm512_loadu_si512(xq + b * 256 + p * 64);
#pragma GCC unroll 4
      for (int r = 0; r < NR; ++r) {
        const __m512i isum = F::kOffsetX ? _mm512_dpbusd_epi32(init[r], x, wz[r])
                                         : _mm512_dpbusd_epi32(init[r], wz[r], x);
        acc[r][p] = _mm512_fmadd_ps(_mm512_permutexvar_ps(pick[p], s[r]), _mm512_cvtepi32_ps(isum),
                                    acc[r][p]);
      }
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < NR; ++r) {
    __m256 v[8];
#pragma GCC unroll 4
    for (int p = 0; p < 4; ++p) {
      v[2 * p] = _mm512_castps512_ps256(acc[r][p]);
      v[2 * p + 1] = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(acc[r][p]), 1));
    }
    _mm256_storeu_ps(out + r * 8, _mm256_add_ps(hsum8(v), accm[r]));
  }
}

#endif

// One weight row x 8 activation rows (tokens 8g .. 8g+7, g = t0 / 8): each weight block is
// unpacked once and used for the 8 tokens from registers; the 8 block scales d_w * d_x come
// from one vector multiply, the m_w * s_x terms (Q8_1) from one vector fma per block, and the
// 8 accumulators are reduced together at the end. out[t].
template <typename F>
__attribute__((always_inline)) inline void micro8(const std::uint8_t* w, const XScales& sc,
                                                  std::int64_t t0, float* out) {
#if PRIMA_X86_AVX512
  return micro8_zmm<F, 1>(w, 0, sc, t0, out);
#endif
  using W = typename F::W;
  const std::int64_t nb = sc.nb;
  const std::int8_t* xq = sc.xq8 + (t0 / 8) * nb * 256;
  const float* dx8 = sc.dx8 + (t0 / 8) * nb * 8;
  const float* sx8 = F::kMin ? sc.sx8 + (t0 / 8) * nb * 8 : nullptr;
  __m256 acc[8];
#pragma GCC unroll 8
  for (int t = 0; t < 8; ++t) acc[t] = _mm256_setzero_ps();
  __m256 accm = _mm256_setzero_ps();
  const W* wb = reinterpret_cast<const W*>(w);
  for (std::int64_t b = 0; b < nb; ++b) {
    const __m256i u = F::u(wb[b]);
    alignas(32) float s[8];
    float dw, mw = 0.0f;
    if constexpr (F::kMin)
      dm_of(wb[b], dw, mw);
    else
      dw = h2f(wb[b].d);
    _mm256_store_ps(s, _mm256_mul_ps(_mm256_set1_ps(dw), _mm256_loadu_ps(dx8 + b * 8)));
    if constexpr (F::kMin)
      accm = _mm256_fmadd_ps(_mm256_set1_ps(mw), _mm256_loadu_ps(sx8 + b * 8), accm);
#if PRIMA_X86_VNNI
    if constexpr (F::kOffsetX) {
      // The interleaved copy holds x + 128 (u8); the lanes start at -128 * sum(w) of their 4
      // bytes, so each lane ends at exactly sum(x * w), as with the sign trick.
      const __m256i wq = F::w_s8(wb[b]);
      const __m256i zero = _mm256_setzero_si256();
      const __m256i init = _mm256_sub_epi32(zero, dpbusd256(zero, _mm256_set1_epi8(-128), wq));
#pragma GCC unroll 8
      for (int t = 0; t < 8; ++t) {
        const __m256 p = _mm256_cvtepi32_ps(dpbusd256(init, load32(xq + b * 256 + t * 32), wq));
        acc[t] = _mm256_fmadd_ps(_mm256_broadcast_ss(s + t), p, acc[t]);
      }
      continue;
    }
#endif
#pragma GCC unroll 8
    for (int t = 0; t < 8; ++t) {
      const __m256 p = dot_us(u, F::s(load32(xq + b * 256 + t * 32), wb[b], u));
      acc[t] = _mm256_fmadd_ps(_mm256_broadcast_ss(s + t), p, acc[t]);
    }
  }
  _mm256_storeu_ps(out, _mm256_add_ps(hsum8(acc), accm));
}

// NR weight rows x NT activation rows. out[r * NT + t].
template <typename F, int NR, int NT>
__attribute__((always_inline)) inline void micro(const std::uint8_t* w, std::size_t ws,
                                                 const std::uint8_t* x, std::size_t xs,
                                                 const XScales& sc, std::int64_t t0, float* out) {
  using W = typename F::W;
  using X = typename F::X;
  // One accumulator per (row, token), blocks in order: the same float operations as micro8
  // for every token (batch invariance: a token's result does not depend on its tile). Two
  // sets (even/odd blocks) would hide more fma latency at one token but change the sums.
  constexpr int kSets = 1;
  __m256 acc[kSets][NR][NT];
  float summ[NR][NT] = {};
#pragma GCC unroll 8
  for (int a = 0; a < kSets; ++a)
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
      for (int t = 0; t < NT; ++t) acc[a][r][t] = _mm256_setzero_ps();
  const std::int64_t nb = sc.nb;
  // One block into accumulator set S (a compile-time index: the accumulators stay in
  // registers).
  auto step = [&]<int S>(std::int64_t b) __attribute__((always_inline)) {
    __m256i u[NR];
    float dw[NR], mw[NR];
    const W* wb[NR];
#pragma GCC unroll 8
    for (int r = 0; r < NR; ++r) {
      wb[r] = reinterpret_cast<const W*>(w + r * ws) + b;
      u[r] = F::u(*wb[r]);
      if constexpr (F::kMin)
        dm_of(*wb[r], dw[r], mw[r]);
      else
        dw[r] = h2f(wb[r]->d);
    }
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      const X& xb = reinterpret_cast<const X*>(x + t * xs)[b];
      const __m256i xq = load32(xb.qs);
      const float dx = sc.dx[(t0 + t) * nb + b];
#pragma GCC unroll 8
      for (int r = 0; r < NR; ++r) {
        const __m256 p = dot_us(u[r], F::s(xq, *wb[r], u[r]));
        acc[S][r][t] = _mm256_fmadd_ps(_mm256_set1_ps(dw[r] * dx), p, acc[S][r][t]);
        // Fused, as micro8's vector fma.
        if constexpr (F::kMin) summ[r][t] = std::fma(mw[r], sc.sx[(t0 + t) * nb + b], summ[r][t]);
      }
    }
  };
  std::int64_t b = 0;
  if constexpr (kSets == 2) {
    for (; b + 2 <= nb; b += 2) {
      step.template operator()<0>(b);
      step.template operator()<1>(b + 1);
    }
  }
  for (; b < nb; ++b) step.template operator()<0>(b);
#pragma GCC unroll 8
  for (int r = 0; r < NR; ++r)
#pragma GCC unroll 8
    for (int t = 0; t < NT; ++t) {
      __m256 a = acc[0][r][t];
      if constexpr (kSets == 2) a = _mm256_add_ps(a, acc[1][r][t]);
      out[r * NT + t] = hsum(a) + summ[r][t];
    }
}

// In a decode step every weight matrix streams from memory once (the model is larger than the
// caches): the NR rows kPrefetchRows ahead of the current ones are requested into L1 on the
// first token block (the hardware prefetcher alone left the 8-token LM head at ~4 GB/s).
constexpr std::int64_t kPrefetchRows = 4;
template <int NR>
inline void prefetch_rows_ahead(const std::uint8_t* wr, std::size_t ws) {
  const std::uint8_t* p = wr + std::size_t(kPrefetchRows > NR ? kPrefetchRows : NR) * ws;
  for (std::size_t o = 0; o < std::size_t(NR) * ws; o += 64)
    _mm_prefetch(reinterpret_cast<const char*>(p + o), _MM_HINT_T0);
}

// With AVX-512, 8 or more tokens: kZmmRows weight rows per micro8_zmm pass (the activation
// loads shared), for rows of at most kZmmRowsMaxBlocks blocks. Measured on an AMD EPYC (Zen 4,
// BM_KernelMatmul, 8 tokens): 4 rows ~10% faster than 1 for Q4_1 576 columns; 2 rows ~5% for
// the Q8_0 LM head (4 rows slower); on 1536-column rows streamed from memory more rows per pass
// were slower (4 rows: 1.3x the time), so those keep one row.
template <typename F>
constexpr int kZmmRows = std::is_same_v<F, FmtQ8_0> ? 2 : 4;
constexpr std::int64_t kZmmRowsMaxBlocks = 24;
template <typename F, int NR>
inline void rows_pass(const std::uint8_t* wr, std::size_t ws, const std::uint8_t* x, std::size_t xs,
                      const XScales& sc, std::int64_t r, std::int64_t tb, std::int64_t te, float* y,
                      std::int64_t ldy) {
  float out[NR * 8];
  std::int64_t t = tb;
  if (tb == 0) prefetch_rows_ahead<NR>(wr, ws);
  if constexpr (NR == 1) {
    for (; t + 8 <= te; t += 8) {
      micro8<F>(wr, sc, t, out);
      for (int j = 0; j < 8; ++j) y[(t + j) * ldy + r] = out[j];
    }
  }
#if PRIMA_X86_AVX512
  if constexpr (NR == kZmmRows<F>) {
    for (; t + 8 <= te; t += 8) {
      micro8_zmm<F, NR>(wr, ws, sc, t, out);
      for (int i = 0; i < NR; ++i)
        for (int j = 0; j < 8; ++j) y[(t + j) * ldy + r + i] = out[i * 8 + j];
    }
  }
#endif
  for (; t + 4 <= te; t += 4) {
    micro<F, NR, 4>(wr, ws, x + std::size_t(t) * xs, xs, sc, t, out);
    for (int i = 0; i < NR; ++i)
      for (int j = 0; j < 4; ++j) y[(t + j) * ldy + r + i] = out[i * 4 + j];
  }
  const int left = static_cast<int>(te - t);
  const std::uint8_t* xt = x + std::size_t(t) * xs;
  switch (left) {
    case 3:
      micro<F, NR, 3>(wr, ws, xt, xs, sc, t, out);
      break;
    case 2:
      micro<F, NR, 2>(wr, ws, xt, xs, sc, t, out);
      break;
    case 1:
      micro<F, NR, 1>(wr, ws, xt, xs, sc, t, out);
      break;
    default:
      return;
  }
  for (int i = 0; i < NR; ++i)
    for (int j = 0; j < left; ++j) y[(t + j) * ldy + r + i] = out[i * left + j];
}

constexpr int kTokenBlock = 64;  // activation rows kept hot while sweeping the weight rows
// Weight rows per pass below 8 tokens: 4 for the 4-bit formats (one token's accumulators
// alone cannot hide the fma latency); 1 for Q8_0, whose blocks are twice the bytes (4 rows
// measured no faster for the 49152x576 LM head).
template <typename F>
constexpr int kDecodeRows = std::is_same_v<F, FmtQ8_0> ? 1 : 4;

template <typename F>
void tile(const std::uint8_t* w, std::size_t w_stride, std::int64_t r0, std::int64_t r1,
          const std::uint8_t* x, std::size_t x_stride, std::int64_t n, std::int64_t cols, float* y,
          std::int64_t ldy, std::uint64_t x_id) {
  using X = typename F::X;
  const std::int64_t nb = cols / 32;
  const std::int64_t n8 = n / 8 * 8;  // tokens in full groups of 8
  // The scales and the interleaved copy below depend on x alone: a thread that runs several
  // ranges of one product (or of Q, K and V together) prepares them once.
  bool ready = false;
  float* dx = scratch_floats(std::size_t((2 * n + 10 * n8) * nb), x_id, &ready);
  float* sx = dx + n * nb;
  float* dx8 = sx + n * nb;
  float* sx8 = dx8 + n8 * nb;
  auto* xq8 = reinterpret_cast<std::int8_t*>(sx8 + n8 * nb);  // n8 * nb * 32 bytes
  for (std::int64_t t = 0; t < n && !ready; ++t) {
    const X* xb = reinterpret_cast<const X*>(x + std::size_t(t) * x_stride);
    float* d8 = dx8 + (t / 8) * nb * 8 + t % 8;
    float* s8 = sx8 + (t / 8) * nb * 8 + t % 8;
    for (std::int64_t b = 0; b < nb; ++b) {
      dx[t * nb + b] = h2f(xb[b].d);
      if constexpr (F::kMin) sx[t * nb + b] = h2f(xb[b].s);
      if (t < n8) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(xq8 + (((t / 8) * nb + b) * 8 + t % 8) * 32),
                            F::kOffsetX ? _mm256_xor_si256(load32(xb[b].qs), _mm256_set1_epi8(-128))
                                        : load32(xb[b].qs));
        d8[b * 8] = dx[t * nb + b];
        if constexpr (F::kMin) s8[b * 8] = sx[t * nb + b];
      }
    }
  }
  const XScales sc{dx, sx, dx8, sx8, xq8, nb};
  for (std::int64_t tb = 0; tb < n; tb += kTokenBlock) {
    const std::int64_t te = n < tb + kTokenBlock ? n : tb + kTokenBlock;
    // Fewer than 8 tokens (decode): kDecodeRows weight rows per pass, so that independent
    // accumulators hide the fma latency (each (row, token) still sums its blocks in order:
    // batch invariance). 8 or more: one row per pass through the 8-token kernel.
    std::int64_t r = r0;
#if PRIMA_X86_AVX512
    if (te - tb >= 8 && nb <= kZmmRowsMaxBlocks)
      for (; r + kZmmRows<F> <= r1; r += kZmmRows<F>)
        rows_pass<F, kZmmRows<F>>(w + std::size_t(r) * w_stride, w_stride, x, x_stride, sc, r, tb,
                                  te, y, ldy);
#endif
    if (te - tb < 8)
      for (; r + kDecodeRows<F> <= r1; r += kDecodeRows<F>)
        rows_pass<F, kDecodeRows<F>>(w + std::size_t(r) * w_stride, w_stride, x, x_stride, sc, r,
                                     tb, te, y, ldy);
    for (; r < r1; ++r)
      rows_pass<F, 1>(w + std::size_t(r) * w_stride, w_stride, x, x_stride, sc, r, tb, te, y, ldy);
  }
}

// Q8_0 / Q8_1 activation rows with AVX2, bit for bit as quantize_row: amax by a max tree,
// the same float products x * (127 / amax), round half to even (_mm256_round_ps in the
// default mode, as nearbyint), s = d * sum(q) from exact integer sums; other types go to
// quantize_row.
template <typename Block>
void quantize_q8_rows(const float* x, Block* y, std::int64_t nb) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (std::int64_t i = 0; i < nb; ++i, x += 32) {
    __m256 v[4];
    for (int j = 0; j < 4; ++j) v[j] = _mm256_loadu_ps(x + 8 * j);
    __m256 m =
        _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                      _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    __m128 h = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
    h = _mm_max_ps(h, _mm_movehl_ps(h, h));
    h = _mm_max_ss(h, _mm_movehdup_ps(h));
    const float amax = _mm_cvtss_f32(h);
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    y[i].d = fp32_to_fp16(d);
    const __m256 idv = _mm256_set1_ps(id);
    __m256i q[4];
    for (int j = 0; j < 4; ++j)
      q[j] = _mm256_cvtps_epi32(
          _mm256_round_ps(_mm256_mul_ps(v[j], idv), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    // packs interleave the 128-bit lanes: bytes come out as dwords 0,2,4,6,1,3,5,7 of the
    // element order; the permute puts them back.
    const __m256i p =
        _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[i].qs), _mm256_permutevar8x32_epi32(p, order));
    if constexpr (sizeof(Block) == sizeof(BlockQ8_1)) {
      const __m256i s8 =
          _mm256_add_epi32(_mm256_add_epi32(q[0], q[1]), _mm256_add_epi32(q[2], q[3]));
      __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(s8), _mm256_extracti128_si256(s8, 1));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
      s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
      y[i].s = fp32_to_fp16(d * float(_mm_cvtsi128_si32(s4)));
    }
  }
}

void quantize_x86(DType t, const float* x, void* dst, std::int64_t n) {
  if (t == DType::kQ8_1)
    quantize_q8_rows(x, static_cast<BlockQ8_1*>(dst), n / 32);
  else if (t == DType::kQ8_0)
    quantize_q8_rows(x, static_cast<BlockQ8_0*>(dst), n / 32);
  else
    quantize_row(t, x, dst, n);
}

// The kernel set: these three formats here, the rest from the portable kernels.
inline MatmulKernels make_x86_kernels(const char* isa) {
  MatmulKernels m = portable_kernels();
  m.isa = isa;
  m.q4_0 = &tile<FmtQ4_0>;
  m.q4_1 = &tile<FmtQ4_1>;
  m.q8_0 = &tile<FmtQ8_0>;
  m.quantize_x = &quantize_x86;
  return m;
}

}  // namespace
}  // namespace prima::kernels::detail
