// AVX-512 VNNI kernels for packed weights (packed.h): lanes are the 16 rows of a panel. Per
// block, the panel's quants are unpacked once into registers; per token, 8 vpdpbusd take 4
// weight bytes of every row and 4 activation bytes broadcast from memory: lane j's exact
// integer sum (elements 4j .. 4j + 3) for the 16 rows, then one conversion and one fma into
// lane j's float partial sums, as llama.cpp's AVX2 dot products form them per row (packed.h),
// so the results are the GGUF-layout kernels' and the portable packed kernels' bit for bit,
// whatever the number of tokens. Up to 2 tokens share a pass over a panel's blocks (8 partial
// sums of 16 rows per token). Only called after the run-time CPU check; the target is set by
// pragma. Stateless; thread-safe (the scratch buffer is per thread).
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands from
// self-initialised locals, which -Wmaybe-uninitialized reports (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/packed.h"

namespace prima::kernels::detail {
namespace {

// 4 activation bytes (one group of a block's quants) in every lane.
inline __m512i bcast4(const std::int8_t* p) {
  int v;
  __builtin_memcpy(&v, p, 4);
  return _mm512_set1_epi32(v);
}

inline void store_rows(float* y, __m512 v, int rows) {
  if (rows == kPanelRows)
    _mm512_storeu_ps(y, v);
  else
    _mm512_mask_storeu_ps(y, static_cast<__mmask16>((1u << rows) - 1), v);
}

// llama.cpp's row sum: its 8 lane partial sums l0..l7 as ((l0 + l4) + (l2 + l6)) + ((l1 + l5) +
// (l3 + l7)) (hsum_float_8), here for 16 rows at once.
inline __m512 hsum_lanes(const __m512 l[8]) {
  return _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(l[0], l[4]), _mm512_add_ps(l[2], l[6])),
                       _mm512_add_ps(_mm512_add_ps(l[1], l[5]), _mm512_add_ps(l[3], l[7])));
}

// One panel x T tokens (x: token 0's row; dx, sx: token 0's scales, nb apart per token).
// Lane j of a row holds the block's elements 4j .. 4j + 3 (chunk j % 4's low nibbles for
// j < 4, its high nibbles for j >= 4): one vpdpbusd gives lane j's integer sum for 16 rows.
template <int T>
void q4_1_panel(const std::uint8_t* panel, std::int64_t nb, const std::uint8_t* x,
                std::size_t x_stride, const float* dx, const float* sx, float* y, std::int64_t ldy,
                int rows) {
  __m512 acc[T][8], accm[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) {
    accm[t] = _mm512_setzero_ps();
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) acc[t][j] = _mm512_setzero_ps();
  }
  const __m512i mask = _mm512_set1_epi8(0x0f);
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::uint8_t* blk = panel + std::size_t(b) * kQ4_1PanelBlock;
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    const __m512 mw =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32)));
    __m512i u[8];
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512i q = _mm512_loadu_si512(blk + 64 + 64 * k);
      u[k] = _mm512_and_si512(q, mask);
      u[4 + k] = _mm512_and_si512(_mm512_srli_epi16(q, 4), mask);
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const auto& xb = reinterpret_cast<const BlockQ8_1*>(x + std::size_t(t) * x_stride)[b];
      const std::size_t i = std::size_t(t * nb + b);
      const __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(dx[i]));
      accm[t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(sx[i]), accm[t]);
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const __m512i p = _mm512_dpbusd_epi32(_mm512_setzero_si512(), u[j], bcast4(xb.qs + 4 * j));
        acc[t][j] = _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(p), acc[t][j]);
      }
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t)
    store_rows(y + t * ldy, _mm512_add_ps(hsum_lanes(acc[t]), accm[t]), rows);
}

// Q8_0: weights stored as q + 128 (u8); lane j of token t starts at corr[(t * nb + b) * 8 + j]
// = -128 * (the sum of the token's 4 bytes of lane j), so it ends at the exact sum(q x).
template <int T>
void q8_0_panel(const std::uint8_t* panel, std::int64_t nb, const std::uint8_t* x,
                std::size_t x_stride, const float* dx, const float* corr, float* y,
                std::int64_t ldy, int rows) {
  __m512 acc[T][8];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t)
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) acc[t][j] = _mm512_setzero_ps();
  const auto* corr_bits = reinterpret_cast<const std::int32_t*>(corr);
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::uint8_t* blk = panel + std::size_t(b) * kQ8_0PanelBlock;
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    __m512i q[8];
#pragma GCC unroll 8
    for (int j = 0; j < 8; ++j) q[j] = _mm512_loadu_si512(blk + 32 + 64 * j);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const auto& xb = reinterpret_cast<const BlockQ8_0*>(x + std::size_t(t) * x_stride)[b];
      const std::size_t i = std::size_t(t * nb + b);
      const __m512 s = _mm512_mul_ps(dw, _mm512_set1_ps(dx[i]));
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const __m512i p = _mm512_dpbusd_epi32(_mm512_set1_epi32(corr_bits[i * 8 + std::size_t(j)]),
                                              q[j], bcast4(xb.qs + 4 * j));
        acc[t][j] = _mm512_fmadd_ps(s, _mm512_cvtepi32_ps(p), acc[t][j]);
      }
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) store_rows(y + t * ldy, hsum_lanes(acc[t]), rows);
}

using PanelFn = void (*)(const std::uint8_t*, std::int64_t, const std::uint8_t*, std::size_t,
                         const float*, const float*, float*, std::int64_t, int);

// Tokens per pass over a panel's blocks: each holds 8 lane accumulators of 16 rows per token
// (2 tokens: 16 of the 32 registers, the block's unpacked quants 8 more).
constexpr int kPanelTokens = 2;

template <bool kQ4_1>
void packed_tile(const std::uint8_t* w, std::size_t panel_bytes, std::int64_t r0, std::int64_t r1,
                 const std::uint8_t* x, std::size_t x_stride, std::int64_t n, std::int64_t cols,
                 float* y, std::int64_t ldy, std::uint64_t x_id) {
  static constexpr PanelFn q4[kPanelTokens + 1] = {nullptr, &q4_1_panel<1>, &q4_1_panel<2>};
  static constexpr PanelFn q8[kPanelTokens + 1] = {nullptr, &q8_0_panel<1>, &q8_0_panel<2>};
  const PanelFn* fns = kQ4_1 ? q4 : q8;
  const std::int64_t nb = cols / 32;
  const std::int64_t per = packed_x_second_per_block(kQ4_1 ? DType::kQ8_1 : DType::kQ8_0);
  bool holds = false;
  float* dx = scratch_floats(std::size_t((1 + per) * n * nb), x_id, &holds);
  float* second = dx + n * nb;
  if (!holds) packed_x_scales(kQ4_1 ? DType::kQ8_1 : DType::kQ8_0, x, x_stride, n, nb, dx, second);
  for (std::int64_t r = r0; r < r1; r += kPanelRows) {
    const std::uint8_t* panel = w + std::size_t(r / kPanelRows) * panel_bytes;
    const int rows = static_cast<int>(r1 - r < kPanelRows ? r1 - r : kPanelRows);
    for (std::int64_t t = 0; t < n; t += kPanelTokens) {
      const int T = static_cast<int>(n - t < kPanelTokens ? n - t : kPanelTokens);
      fns[T](panel, nb, x + std::size_t(t) * x_stride, x_stride, dx + t * nb, second + t * nb * per,
             y + t * ldy + r, ldy, rows);
    }
  }
}

}  // namespace

TileFn avx512_packed_q4_1() {
  return &packed_tile<true>;
}
TileFn avx512_packed_q8_0() {
  return &packed_tile<false>;
}

}  // namespace prima::kernels::detail
