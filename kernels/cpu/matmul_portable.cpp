// Portable (plain C++) matmul tile kernels: block dot products of quantized weight rows with
// activation rows in the partner format, up to 4 activation rows per pass over a weight
// row so that the weight row is unpacked once for several tokens. Stateless; thread-safe.
#include <algorithm>

#include "kernels/cpu/matmul_kernels.h"

namespace prima::kernels::detail {

namespace {

constexpr int kTokenGroup = 4;   // activation rows per pass over one weight row
constexpr int kTokenBlock = 64;  // activation rows kept hot while sweeping the weight rows

// Runs Dot::row(w_row, x_rows, x_stride, nt, cols, acc) over the tile, blocked over tokens.
template <typename Dot>
void tile(const std::uint8_t* w, std::size_t w_stride, std::int64_t r0, std::int64_t r1,
          const std::uint8_t* x, std::size_t x_stride, std::int64_t n, std::int64_t cols, float* y,
          std::int64_t ldy, std::uint64_t /*x_id: nothing derived from x to reuse*/) {
  for (std::int64_t tb = 0; tb < n; tb += kTokenBlock) {
    const std::int64_t te = std::min(n, tb + kTokenBlock);
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::uint8_t* wr = w + std::size_t(r) * w_stride;
      for (std::int64_t t = tb; t < te; t += kTokenGroup) {
        const int nt = static_cast<int>(std::min<std::int64_t>(kTokenGroup, te - t));
        float acc[kTokenGroup];
        Dot::row(wr, x + std::size_t(t) * x_stride, x_stride, nt, cols, acc);
        for (int j = 0; j < nt; ++j) y[(t + j) * ldy + r] = acc[j];
      }
    }
  }
}

struct DotQ4_0 {
  static void row(const std::uint8_t* w, const std::uint8_t* x, std::size_t xs, int nt,
                  std::int64_t cols, float* acc) {
    const auto* wb = reinterpret_cast<const BlockQ4_0*>(w);
    for (int j = 0; j < nt; ++j) acc[j] = 0.0f;
    for (std::int64_t b = 0; b < cols / 32; ++b) {
      std::int8_t q[32];
      for (int i = 0; i < 16; ++i) {
        q[i] = static_cast<std::int8_t>((wb[b].qs[i] & 0xf) - 8);
        q[i + 16] = static_cast<std::int8_t>((wb[b].qs[i] >> 4) - 8);
      }
      const float dw = fp16_to_fp32(wb[b].d);
      for (int j = 0; j < nt; ++j) {
        const auto& xb = reinterpret_cast<const BlockQ8_0*>(x + j * xs)[b];
        int sum = 0;
        for (int i = 0; i < 32; ++i) sum += q[i] * xb.qs[i];
        acc[j] += dw * fp16_to_fp32(xb.d) * float(sum);
      }
    }
  }
};

struct DotQ4_1 {
  static void row(const std::uint8_t* w, const std::uint8_t* x, std::size_t xs, int nt,
                  std::int64_t cols, float* acc) {
    const auto* wb = reinterpret_cast<const BlockQ4_1*>(w);
    for (int j = 0; j < nt; ++j) acc[j] = 0.0f;
    for (std::int64_t b = 0; b < cols / 32; ++b) {
      std::int8_t q[32];
      for (int i = 0; i < 16; ++i) {
        q[i] = static_cast<std::int8_t>(wb[b].qs[i] & 0xf);
        q[i + 16] = static_cast<std::int8_t>(wb[b].qs[i] >> 4);
      }
      const float dw = fp16_to_fp32(wb[b].d), mw = fp16_to_fp32(wb[b].m);
      for (int j = 0; j < nt; ++j) {
        const auto& xb = reinterpret_cast<const BlockQ8_1*>(x + j * xs)[b];
        int sum = 0;
        for (int i = 0; i < 32; ++i) sum += q[i] * xb.qs[i];
        acc[j] += dw * fp16_to_fp32(xb.d) * float(sum) + mw * fp16_to_fp32(xb.s);
      }
    }
  }
};

struct DotQ8_0 {
  static void row(const std::uint8_t* w, const std::uint8_t* x, std::size_t xs, int nt,
                  std::int64_t cols, float* acc) {
    const auto* wb = reinterpret_cast<const BlockQ8_0*>(w);
    for (int j = 0; j < nt; ++j) acc[j] = 0.0f;
    for (std::int64_t b = 0; b < cols / 32; ++b) {
      const float dw = fp16_to_fp32(wb[b].d);
      for (int j = 0; j < nt; ++j) {
        const auto& xb = reinterpret_cast<const BlockQ8_0*>(x + j * xs)[b];
        int sum = 0;
        for (int i = 0; i < 32; ++i) sum += wb[b].qs[i] * xb.qs[i];
        acc[j] += dw * fp16_to_fp32(xb.d) * float(sum);
      }
    }
  }
};

struct DotQ6_K {
  static void row(const std::uint8_t* w, const std::uint8_t* x, std::size_t xs, int nt,
                  std::int64_t cols, float* acc) {
    const auto* wb = reinterpret_cast<const BlockQ6_K*>(w);
    for (int j = 0; j < nt; ++j) acc[j] = 0.0f;
    for (std::int64_t b = 0; b < cols / 256; ++b) {
      std::int8_t q[256];
      for (int h = 0; h < 2; ++h) {
        const std::uint8_t* ql = wb[b].ql + 64 * h;
        const std::uint8_t* qh = wb[b].qh + 32 * h;
        std::int8_t* o = q + 128 * h;
        for (int l = 0; l < 32; ++l) {
          o[l] = static_cast<std::int8_t>(((ql[l] & 0xf) | (qh[l] & 3) << 4) - 32);
          o[l + 32] = static_cast<std::int8_t>(((ql[l + 32] & 0xf) | ((qh[l] >> 2) & 3) << 4) - 32);
          o[l + 64] = static_cast<std::int8_t>(((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32);
          o[l + 96] = static_cast<std::int8_t>(((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32);
        }
      }
      const float dw = fp16_to_fp32(wb[b].d);
      for (int j = 0; j < nt; ++j) {
        const auto& xb = reinterpret_cast<const BlockQ8_K*>(x + j * xs)[b];
        int sum = 0;
        for (int s = 0; s < 16; ++s) {
          int ss = 0;
          for (int i = 0; i < 16; ++i) ss += q[16 * s + i] * xb.qs[16 * s + i];
          sum += ss * wb[b].scales[s];
        }
        acc[j] += dw * xb.d * float(sum);
      }
    }
  }
};

// Element types: F32 weights with F32 activations; F16/BF16 with activations in the same
// half format, products and sums in float.
template <float (*Conv)(std::uint16_t)>
struct DotHalf {
  static void row(const std::uint8_t* w, const std::uint8_t* x, std::size_t xs, int nt,
                  std::int64_t cols, float* acc) {
    const auto* wh = reinterpret_cast<const std::uint16_t*>(w);
    for (int j = 0; j < nt; ++j) {
      const auto* xh = reinterpret_cast<const std::uint16_t*>(x + j * xs);
      float s = 0.0f;
      for (std::int64_t i = 0; i < cols; ++i) s += Conv(wh[i]) * Conv(xh[i]);
      acc[j] = s;
    }
  }
};

struct DotF32 {
  static void row(const std::uint8_t* w, const std::uint8_t* x, std::size_t xs, int nt,
                  std::int64_t cols, float* acc) {
    const auto* wf = reinterpret_cast<const float*>(w);
    for (int j = 0; j < nt; ++j) {
      const auto* xf = reinterpret_cast<const float*>(x + j * xs);
      float s = 0.0f;
      for (std::int64_t i = 0; i < cols; ++i) s += wf[i] * xf[i];
      acc[j] = s;
    }
  }
};

}  // namespace

const MatmulKernels& portable_kernels() {
  static const MatmulKernels k = [] {
    MatmulKernels m{"portable",
                    &tile<DotF32>,
                    &tile<DotHalf<&fp16_to_fp32>>,
                    &tile<DotHalf<&bf16_to_fp32>>,
                    &tile<DotQ4_0>,
                    &tile<DotQ4_1>,
                    &tile<DotQ8_0>,
                    &tile<DotQ6_K>,
                    &quantize_row};
    m.q4_1_packed = portable_packed_q4_1();
    m.q8_0_packed = portable_packed_q8_0();
    return m;
  }();
  return k;
}

}  // namespace prima::kernels::detail
