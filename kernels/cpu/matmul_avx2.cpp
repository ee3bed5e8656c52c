// AVX2/FMA/F16C matmul tile kernels for Q4_0, Q4_1 and Q8_0 weights (the model's types):
// nibbles unpacked with and/shift, 8-bit products with _mm256_maddubs_epi16 and
// _mm256_madd_epi16, one fma per block into float accumulators. A weight block is unpacked
// once for up to 4 activation rows. Other types use the portable kernels. Compiled with
// -mavx2 -mfma -mf16c; only called after the run-time CPU check. Stateless; thread-safe.
#include <immintrin.h>

#include <algorithm>

#include "kernels/cpu/matmul_kernels.h"

namespace prima::kernels::detail {

namespace {

constexpr int kTokenBlock = 64;

inline float h2f(std::uint16_t h) {
  return _cvtsh_ss(h);
}

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 32 nibbles -> 32 bytes in element order (low nibbles are elements 0..15).
inline __m256i unpack_nibbles(const std::uint8_t* qs) {
  const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qs));
  const __m128i m = _mm_set1_epi8(0x0f);
  const __m128i lo = _mm_and_si128(b, m);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(b, 4), m);
  return _mm256_set_m128i(hi, lo);
}

// Sum of u8 x s8 products of 32 bytes, as 8 float partial sums.
inline __m256 dot_us(__m256i u, __m256i s) {
  const __m256i p16 = _mm256_maddubs_epi16(u, s);
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)));
}

// Signed x signed via the sign trick: |w| * (x * sign(w)).
inline __m256 dot_ss(__m256i w, __m256i x) {
  return dot_us(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

inline __m256i load32(const std::int8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// NT activation rows against one weight row. With NT == 1, even and odd blocks go to two
// accumulators to break the fma dependency chain.
template <int NT>
struct Q4_1Row {
  static void run(const std::uint8_t* w, const std::uint8_t* x, std::size_t xs, std::int64_t nb,
                  float* out) {
    const auto* wb = reinterpret_cast<const BlockQ4_1*>(w);
    constexpr int kAcc = NT == 1 ? 2 : 1;
    __m256 acc[kAcc][NT];
    float summ[NT];
    for (int a = 0; a < kAcc; ++a)
      for (int j = 0; j < NT; ++j) acc[a][j] = _mm256_setzero_ps();
    for (int j = 0; j < NT; ++j) summ[j] = 0.0f;
    for (std::int64_t b = 0; b < nb; ++b) {
      const __m256i q = unpack_nibbles(wb[b].qs);
      const float dw = h2f(wb[b].d), mw = h2f(wb[b].m);
      for (int j = 0; j < NT; ++j) {
        const auto& xb = reinterpret_cast<const BlockQ8_1*>(x + j * xs)[b];
        const __m256 p = dot_us(q, load32(xb.qs));
        __m256& a = acc[kAcc == 2 ? (b & 1) : 0][j];
        a = _mm256_fmadd_ps(_mm256_set1_ps(dw * h2f(xb.d)), p, a);
        summ[j] += mw * h2f(xb.s);
      }
    }
    for (int j = 0; j < NT; ++j) {
      __m256 a = acc[0][j];
      if constexpr (kAcc == 2) a = _mm256_add_ps(a, acc[1][j]);
      out[j] = hsum(a) + summ[j];
    }
  }
};

template <int NT>
struct Q8_0Row {
  static void run(const std::uint8_t* w, const std::uint8_t* x, std::size_t xs, std::int64_t nb,
                  float* out) {
    const auto* wb = reinterpret_cast<const BlockQ8_0*>(w);
    constexpr int kAcc = NT == 1 ? 2 : 1;
    __m256 acc[kAcc][NT];
    for (int a = 0; a < kAcc; ++a)
      for (int j = 0; j < NT; ++j) acc[a][j] = _mm256_setzero_ps();
    for (std::int64_t b = 0; b < nb; ++b) {
      const __m256i q = load32(wb[b].qs);
      const __m256i qa = _mm256_sign_epi8(q, q);
      const float dw = h2f(wb[b].d);
      for (int j = 0; j < NT; ++j) {
        const auto& xb = reinterpret_cast<const BlockQ8_0*>(x + j * xs)[b];
        const __m256 p = dot_us(qa, _mm256_sign_epi8(load32(xb.qs), q));
        __m256& a = acc[kAcc == 2 ? (b & 1) : 0][j];
        a = _mm256_fmadd_ps(_mm256_set1_ps(dw * h2f(xb.d)), p, a);
      }
    }
    for (int j = 0; j < NT; ++j) {
      __m256 a = acc[0][j];
      if constexpr (kAcc == 2) a = _mm256_add_ps(a, acc[1][j]);
      out[j] = hsum(a);
    }
  }
};

template <int NT>
struct Q4_0Row {
  static void run(const std::uint8_t* w, const std::uint8_t* x, std::size_t xs, std::int64_t nb,
                  float* out) {
    const auto* wb = reinterpret_cast<const BlockQ4_0*>(w);
    constexpr int kAcc = NT == 1 ? 2 : 1;
    __m256 acc[kAcc][NT];
    for (int a = 0; a < kAcc; ++a)
      for (int j = 0; j < NT; ++j) acc[a][j] = _mm256_setzero_ps();
    const __m256i eight = _mm256_set1_epi8(8);
    for (std::int64_t b = 0; b < nb; ++b) {
      const __m256i q = _mm256_sub_epi8(unpack_nibbles(wb[b].qs), eight);
      const float dw = h2f(wb[b].d);
      for (int j = 0; j < NT; ++j) {
        const auto& xb = reinterpret_cast<const BlockQ8_0*>(x + j * xs)[b];
        const __m256 p = dot_ss(q, load32(xb.qs));
        __m256& a = acc[kAcc == 2 ? (b & 1) : 0][j];
        a = _mm256_fmadd_ps(_mm256_set1_ps(dw * h2f(xb.d)), p, a);
      }
    }
    for (int j = 0; j < NT; ++j) {
      __m256 a = acc[0][j];
      if constexpr (kAcc == 2) a = _mm256_add_ps(a, acc[1][j]);
      out[j] = hsum(a);
    }
  }
};

// Tile driver: token blocks of 64 kept hot, weight rows swept, groups of 4 tokens per pass.
template <template <int> class Row>
void tile(const std::uint8_t* w, std::size_t w_stride, std::int64_t r0, std::int64_t r1,
          const std::uint8_t* x, std::size_t x_stride, std::int64_t n, std::int64_t cols, float* y,
          std::int64_t ldy) {
  const std::int64_t nb = cols / 32;
  for (std::int64_t tb = 0; tb < n; tb += kTokenBlock) {
    const std::int64_t te = std::min(n, tb + kTokenBlock);
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::uint8_t* wr = w + std::size_t(r) * w_stride;
      std::int64_t t = tb;
      float out[4];
      for (; t + 4 <= te; t += 4) {
        Row<4>::run(wr, x + std::size_t(t) * x_stride, x_stride, nb, out);
        for (int j = 0; j < 4; ++j) y[(t + j) * ldy + r] = out[j];
      }
      switch (te - t) {
        case 3:
          Row<3>::run(wr, x + std::size_t(t) * x_stride, x_stride, nb, out);
          break;
        case 2:
          Row<2>::run(wr, x + std::size_t(t) * x_stride, x_stride, nb, out);
          break;
        case 1:
          Row<1>::run(wr, x + std::size_t(t) * x_stride, x_stride, nb, out);
          break;
        default:
          continue;
      }
      for (std::int64_t j = 0; j < te - t; ++j) y[(t + j) * ldy + r] = out[j];
    }
  }
}

}  // namespace

const MatmulKernels* avx2_kernels() {
  static const MatmulKernels k = [] {
    MatmulKernels m = portable_kernels();
    m.isa = "avx2";
    m.q4_0 = &tile<Q4_0Row>;
    m.q4_1 = &tile<Q4_1Row>;
    m.q8_0 = &tile<Q8_0Row>;
    return m;
  }();
  return &k;
}

}  // namespace prima::kernels::detail
