// AVX-512 VNNI kernels for packed weights (packed.h): lanes are the 16 rows of a panel. Per
// block, the panel's quants are unpacked once into registers; per token, 8 vpdpbusd take 4
// weight bytes of every row and 4 activation bytes broadcast from memory (the integer sum of
// the block, exact), then one conversion, one multiply and one or two fused multiply-adds
// serve the 16 rows: packed.h's operations, lane by lane, so the results are those of the
// portable packed kernels bit for bit, whatever the number of tokens. Up to 8 tokens share a
// pass over a panel's blocks. Only called after the run-time CPU check; the target is set by
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

// One panel x T tokens (x: token 0's row; dx, sx: token 0's scales, nb apart per token).
template <int T>
void q4_1_panel(const std::uint8_t* panel, std::int64_t nb, const std::uint8_t* x,
                std::size_t x_stride, const float* dx, const float* sx, float* y, std::int64_t ldy,
                int rows) {
  __m512 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  const __m512i mask = _mm512_set1_epi8(0x0f);
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::uint8_t* blk = panel + std::size_t(b) * kQ4_1PanelBlock;
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    const __m512 mw =
        _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32)));
    __m512i lo[4], hi[4];
#pragma GCC unroll 4
    for (int k = 0; k < 4; ++k) {
      const __m512i q = _mm512_loadu_si512(blk + 64 + 64 * k);
      lo[k] = _mm512_and_si512(q, mask);
      hi[k] = _mm512_and_si512(_mm512_srli_epi16(q, 4), mask);
    }
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const auto& xb = reinterpret_cast<const BlockQ8_1*>(x + std::size_t(t) * x_stride)[b];
      // Two chains (elements 0-15 and 16-31), added: the same exact integer sum.
      __m512i a = _mm512_setzero_si512(), c = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        a = _mm512_dpbusd_epi32(a, lo[k], bcast4(xb.qs + 4 * k));
        c = _mm512_dpbusd_epi32(c, hi[k], bcast4(xb.qs + 16 + 4 * k));
      }
      const __m512 p = _mm512_cvtepi32_ps(_mm512_add_epi32(a, c));
      const std::size_t i = std::size_t(t * nb + b);
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(dx[i])), p, acc[t]);
      acc[t] = _mm512_fmadd_ps(mw, _mm512_set1_ps(sx[i]), acc[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) store_rows(y + t * ldy, acc[t], rows);
}

template <int T>
void q8_0_panel(const std::uint8_t* panel, std::int64_t nb, const std::uint8_t* x,
                std::size_t x_stride, const float* dx, const float* corr, float* y,
                std::int64_t ldy, int rows) {
  __m512 acc[T];
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) acc[t] = _mm512_setzero_ps();
  for (std::int64_t b = 0; b < nb; ++b) {
    const std::uint8_t* blk = panel + std::size_t(b) * kQ8_0PanelBlock;
    const __m512 dw = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)));
    __m512i q[8];
#pragma GCC unroll 8
    for (int k = 0; k < 8; ++k) q[k] = _mm512_loadu_si512(blk + 32 + 64 * k);
#pragma GCC unroll 8
    for (int t = 0; t < T; ++t) {
      const auto& xb = reinterpret_cast<const BlockQ8_0*>(x + std::size_t(t) * x_stride)[b];
      const std::size_t i = std::size_t(t * nb + b);
      int c0;
      __builtin_memcpy(&c0, corr + i, 4);
      // (q + 128) x, starting from -128 sum(x): the exact sum(q x).
      __m512i a = _mm512_set1_epi32(c0), c = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        a = _mm512_dpbusd_epi32(a, q[k], bcast4(xb.qs + 4 * k));
        c = _mm512_dpbusd_epi32(c, q[4 + k], bcast4(xb.qs + 16 + 4 * k));
      }
      const __m512 p = _mm512_cvtepi32_ps(_mm512_add_epi32(a, c));
      acc[t] = _mm512_fmadd_ps(_mm512_mul_ps(dw, _mm512_set1_ps(dx[i])), p, acc[t]);
    }
  }
#pragma GCC unroll 8
  for (int t = 0; t < T; ++t) store_rows(y + t * ldy, acc[t], rows);
}

using PanelFn = void (*)(const std::uint8_t*, std::int64_t, const std::uint8_t*, std::size_t,
                         const float*, const float*, float*, std::int64_t, int);

template <bool kQ4_1>
void packed_tile(const std::uint8_t* w, std::size_t panel_bytes, std::int64_t r0, std::int64_t r1,
                 const std::uint8_t* x, std::size_t x_stride, std::int64_t n, std::int64_t cols,
                 float* y, std::int64_t ldy, std::uint64_t x_id) {
  static constexpr PanelFn q4[9] = {nullptr,        &q4_1_panel<1>, &q4_1_panel<2>,
                                    &q4_1_panel<3>, &q4_1_panel<4>, &q4_1_panel<5>,
                                    &q4_1_panel<6>, &q4_1_panel<7>, &q4_1_panel<8>};
  static constexpr PanelFn q8[9] = {nullptr,        &q8_0_panel<1>, &q8_0_panel<2>,
                                    &q8_0_panel<3>, &q8_0_panel<4>, &q8_0_panel<5>,
                                    &q8_0_panel<6>, &q8_0_panel<7>, &q8_0_panel<8>};
  const PanelFn* fns = kQ4_1 ? q4 : q8;
  const std::int64_t nb = cols / 32;
  bool holds = false;
  float* dx = scratch_floats(std::size_t(2 * n * nb), x_id, &holds);
  float* second = dx + n * nb;
  if (!holds) packed_x_scales(kQ4_1 ? DType::kQ8_1 : DType::kQ8_0, x, x_stride, n, nb, dx, second);
  for (std::int64_t r = r0; r < r1; r += kPanelRows) {
    const std::uint8_t* panel = w + std::size_t(r / kPanelRows) * panel_bytes;
    const int rows = static_cast<int>(r1 - r < kPanelRows ? r1 - r : kPanelRows);
    for (std::int64_t t = 0; t < n; t += 8) {
      const int T = static_cast<int>(n - t < 8 ? n - t : 8);
      fns[T](panel, nb, x + std::size_t(t) * x_stride, x_stride, dx + t * nb, second + t * nb,
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
