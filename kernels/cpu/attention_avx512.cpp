// Attention of one query row per head over a whole context (a decode row in llama.cpp's kVec64
// dot order, a prefill row in its kGemm16 order) in 512-bit registers: kq_rows and pv_rows of
// attention_kernels.h, for the query heads that share one KV head (grouped-query attention)
// together. Bit for bit the AVX2 / portable kq, pv and fold: the same
// products, the same per-lane fma chains in position order, the same fold and reduce16 trees;
// what changes is where the partial sums live and how often an f16 row is converted:
//  - each K or V row (f16 -> f32, 2 cycles per 16 values on Zen 4) is converted once for all
//    the group's heads instead of once per head;
//  - kq's per-position fold (64 lanes -> 16 -> 8 -> 4 -> 1, a chain of dependent adds per
//    score) runs for 16 positions at once: the 16 positions' 16-lane sums are combined by
//    shuffles and adds in the very same pairs (a transposed tree), giving 16 scores in one
//    register;
//  - pv runs a 16-column slice of the output at a time, so that each head's four accumulators
//    of a lane group (lanes l, l + 16, l + 32, l + 48 of the slice) stay in registers while
//    the converted V slice serves all the heads.
// The target is set here by pragma; only called after the run-time CPU check. Stateless;
// thread-safe.
#pragma GCC target("avx2,fma,f16c,avx512f,avx512vl,avx512dq,avx512bw")
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands from
// self-initialised locals, which -Wmaybe-uninitialized reports (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/attention_kernels.h"

namespace prima::kernels::detail {

namespace {

// Heads per pass: their accumulators must fit in the 32 registers.
constexpr int kMaxPassHeads = 4;

inline __m512 load_h16(const std::uint16_t* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
}

inline __mmask16 first_lanes(int n) {
  return static_cast<__mmask16>((1u << n) - 1u);
}

// The scores of 16 positions from their 16-lane sums g[i] (g_t = (a0 + a2) + (a1 + a3) of
// kq's four 16-lane accumulators), as the per-position fold computes each: h_t = g_t + g_t+8,
// u_t = h_t + h_t+4, out = (u_0 + u_2) + (u_1 + u_3). Here the same sums for 16 positions at
// once (float addition is commutative, so only the pairs matter): h for 2 positions per
// register, u for 4, (u_0 + u_2, u_1 + u_3) for 8, out for 16. Lane i of the result is
// position i.
inline __m512 fold16(const float (*g)[16]) {
  __m512 h[8];
#pragma GCC unroll 8
  for (int m = 0; m < 8; ++m) {
    const __m512 a = _mm512_load_ps(g[2 * m]), b = _mm512_load_ps(g[2 * m + 1]);
    // [a lanes 0-7, b lanes 0-7] + [a lanes 8-15, b lanes 8-15]
    h[m] = _mm512_add_ps(_mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f32x4(a, b, _MM_SHUFFLE(3, 2, 3, 2)));
  }
  __m512 u[4];  // 128-bit chunk k of u[r]: u_0..u_3 of position 4r + k
#pragma GCC unroll 8
  for (int r = 0; r < 4; ++r)
    u[r] = _mm512_add_ps(_mm512_shuffle_f32x4(h[2 * r], h[2 * r + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(h[2 * r], h[2 * r + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  // chunk k: [u0 + u2, u1 + u3] of position k (8k' + k), then of position 4 + k (8k' + 4 + k)
  const __m512 v0 = _mm512_add_ps(_mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_ps(u[0], u[1], _MM_SHUFFLE(3, 2, 3, 2)));
  const __m512 v1 = _mm512_add_ps(_mm512_shuffle_ps(u[2], u[3], _MM_SHUFFLE(1, 0, 1, 0)),
                                  _mm512_shuffle_ps(u[2], u[3], _MM_SHUFFLE(3, 2, 3, 2)));
  // chunk k, lane j: the score of position 4j + k
  const __m512 o = _mm512_add_ps(_mm512_shuffle_ps(v0, v1, _MM_SHUFFLE(2, 0, 2, 0)),
                                 _mm512_shuffle_ps(v0, v1, _MM_SHUFFLE(3, 1, 3, 1)));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, o);
}

// kVec64 (V64): lane m of kq's 64 (m < 64) holds elements m, m + 64, ... of the row: register
// r of a head holds lanes 16r .. 16r + 15 and accumulates chunk c's elements 16r .. 16r + 15
// with fma (the first chunk into zero, as kq's fma into zeroed accumulators); a position's 16
// lanes are (a0 + a2) + (a1 + a3). kGemm16: lane l holds elements l, l + 16, ..., one register
// per head accumulating the row's 16-element groups in order. H heads share each converted K
// register; every 16 positions their 16-lane sums go through fold16 (reduce16 for each).
// C: head_dim / 64 when 1 or 2 (unrolled), 0 for any other multiple of 64.
template <int H, int C, bool V64>
void kq_pass(const float* q, int len, const std::uint16_t* const* k_rows, int d, float scale,
             float* scores, int stride) {
  alignas(64) float g[H][16][16];
  const int chunks = C > 0 ? C : d / 64;
  const __m512 zero = _mm512_setzero_ps();
  for (int p0 = 0; p0 < len; p0 += 16) {
    const int n = std::min(16, len - p0);
    for (int i = 0; i < 16; ++i) {
      if (i >= n) {
#pragma GCC unroll 8
        for (int h = 0; h < H; ++h) _mm512_store_ps(g[h][i], zero);
        continue;
      }
      const std::uint16_t* k = k_rows[p0 + i];
      __m512 a[H][4];
#pragma GCC unroll 2
      for (int c = 0; c < chunks; ++c) {
#pragma GCC unroll 8
        for (int r = 0; r < 4; ++r) {
          const __m512 kr = load_h16(k + 64 * c + 16 * r);
#pragma GCC unroll 8
          for (int h = 0; h < H; ++h) {
            const __m512 qr = _mm512_loadu_ps(q + h * d + 64 * c + 16 * r);
            if constexpr (V64)
              a[h][r] = _mm512_fmadd_ps(kr, qr, c == 0 ? zero : a[h][r]);
            else
              a[h][0] = _mm512_fmadd_ps(kr, qr, c == 0 && r == 0 ? zero : a[h][0]);
          }
        }
      }
#pragma GCC unroll 8
      for (int h = 0; h < H; ++h)
        _mm512_store_ps(g[h][i], V64 ? _mm512_add_ps(_mm512_add_ps(a[h][0], a[h][2]),
                                                     _mm512_add_ps(a[h][1], a[h][3]))
                                     : a[h][0]);
    }
#pragma GCC unroll 8
    for (int h = 0; h < H; ++h)
      _mm512_mask_storeu_ps(scores + std::int64_t(h) * stride + p0, first_lanes(n),
                            _mm512_mul_ps(fold16(g[h]), _mm512_set1_ps(scale)));
  }
}

template <int C, bool V64>
void kq_heads(const float* q, int heads, const std::uint16_t* const* k_rows, int len, int d,
              float scale, float* scores) {
  for (int h0 = 0; h0 < heads; h0 += kMaxPassHeads) {
    const float* qh = q + std::int64_t(h0) * d;
    float* sh = scores + std::int64_t(h0) * len;
    switch (std::min(kMaxPassHeads, heads - h0)) {
      case 1:
        kq_pass<1, C, V64>(qh, len, k_rows, d, scale, sh, len);
        break;
      case 2:
        kq_pass<2, C, V64>(qh, len, k_rows, d, scale, sh, len);
        break;
      case 3:
        kq_pass<3, C, V64>(qh, len, k_rows, d, scale, sh, len);
        break;
      default:
        kq_pass<4, C, V64>(qh, len, k_rows, d, scale, sh, len);
        break;
    }
  }
}

template <bool V64>
void kq_order(const float* q, int heads, const std::uint16_t* const* k_rows, int len, int d,
              float scale, float* scores) {
  if (d == 64) return kq_heads<1, V64>(q, heads, k_rows, len, d, scale, scores);
  if (d == 128) return kq_heads<2, V64>(q, heads, k_rows, len, d, scale, scores);
  kq_heads<0, V64>(q, heads, k_rows, len, d, scale, scores);
}

void kq_rows(const float* q, int heads, const std::uint16_t* const* k_rows, int len, int d,
             float scale, DotOrder order, float* scores) {
  if (order == DotOrder::kVec64) return kq_order<true>(q, heads, k_rows, len, d, scale, scores);
  kq_order<false>(q, heads, k_rows, len, d, scale, scores);
}

// pv + fold: with 64 lanes (J = 4, kVec64) lane m sums positions m, m + 64, ... in order (one
// fma each, from zero), g_l = (lane l + lane l+32) + (lane l+16 + lane l+48); with 16 lanes
// (J = 1, kGemm16) g_l is lane l, positions l, l + 16, ...; out = reduce16(g) per output. One
// 16-column slice of the output at a time: for lane group l, each head's J accumulators
// (lanes l, l + 16, .. l + 16 (J - 1)) of the slice are registers and every V row's slice is
// converted once for the H heads; g_l of the slice kept in a 16 x 16 scratch per head, then
// reduced as the AVX2 fold does.
template <int H, int J>
void pv_pass(const float* p, int len, const std::uint16_t* const* v_rows, int d, float* out) {
  alignas(64) float g[H][16][16];
  for (int c = 0; c < d; c += 16) {
    for (int l = 0; l < 16; ++l) {
      __m512 acc[H][J];
#pragma GCC unroll 8
      for (int h = 0; h < H; ++h)
#pragma GCC unroll 8
        for (int j = 0; j < J; ++j) acc[h][j] = _mm512_setzero_ps();
      // Rounds: positions base, base + 16, .. base + 16 (J - 1) for base = l + 16 J k (each
      // lane's positions in order; a lane past the end of the context takes no more).
      for (int base = l; base < len; base += 16 * J) {
#pragma GCC unroll 8
        for (int j = 0; j < J; ++j) {
          const int pos = base + 16 * j;
          if (pos >= len) break;
          const __m512 v = load_h16(v_rows[pos] + c);
#pragma GCC unroll 8
          for (int h = 0; h < H; ++h)
            acc[h][j] =
                _mm512_fmadd_ps(v, _mm512_set1_ps(p[std::int64_t(h) * len + pos]), acc[h][j]);
        }
      }
#pragma GCC unroll 8
      for (int h = 0; h < H; ++h) {
        if constexpr (J == 4)
          _mm512_store_ps(g[h][l], _mm512_add_ps(_mm512_add_ps(acc[h][0], acc[h][2]),
                                                 _mm512_add_ps(acc[h][1], acc[h][3])));
        else
          _mm512_store_ps(g[h][l], acc[h][0]);
      }
    }
// reduce16 over g_0 .. g_15: e_i = g_{i+8} + g_i, f_i = e_{i+4} + e_i,
// out = (f_0 + f_2) + (f_1 + f_3).
#pragma GCC unroll 8
    for (int h = 0; h < H; ++h) {
      __m512 e[8];
#pragma GCC unroll 8
      for (int i = 0; i < 8; ++i)
        e[i] = _mm512_add_ps(_mm512_load_ps(g[h][i + 8]), _mm512_load_ps(g[h][i]));
      __m512 f[4];
#pragma GCC unroll 8
      for (int i = 0; i < 4; ++i) f[i] = _mm512_add_ps(e[i + 4], e[i]);
      _mm512_storeu_ps(out + std::int64_t(h) * d + c,
                       _mm512_add_ps(_mm512_add_ps(f[0], f[2]), _mm512_add_ps(f[1], f[3])));
    }
  }
}

template <int J>
void pv_heads(const float* p, int heads, const std::uint16_t* const* v_rows, int len, int d,
              float* out) {
  for (int h0 = 0; h0 < heads; h0 += kMaxPassHeads) {
    const float* ph = p + std::int64_t(h0) * len;
    float* oh = out + std::int64_t(h0) * d;
    switch (std::min(kMaxPassHeads, heads - h0)) {
      case 1:
        pv_pass<1, J>(ph, len, v_rows, d, oh);
        break;
      case 2:
        pv_pass<2, J>(ph, len, v_rows, d, oh);
        break;
      case 3:
        pv_pass<3, J>(ph, len, v_rows, d, oh);
        break;
      default:
        pv_pass<4, J>(ph, len, v_rows, d, oh);
        break;
    }
  }
}

void pv_rows(const float* p, int heads, const std::uint16_t* const* v_rows, int len, int d,
             DotOrder order, float* out) {
  if (order == DotOrder::kVec64) return pv_heads<4>(p, heads, v_rows, len, d, out);
  pv_heads<1>(p, heads, v_rows, len, d, out);
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
