// Packing Q4_1 / Q8_0 weights into 16-row panels (packed.h) and the portable kernels that read
// them: plain C++ with the operations packed.h defines, which the AVX-512 kernels
// (packed_avx512.cpp) perform lane by lane, so both give the same bits.
#include "kernels/cpu/packed.h"

#include <cmath>
#include <cstring>
#include <new>

#include "kernels/cpu/matmul_kernels.h"

namespace prima::kernels {

namespace {

// Copies each block of each row of w into its panel: put(panel block, row in panel, block).
template <typename Block, typename Put>
void pack_rows(const WeightView& w, std::uint8_t* dst, std::size_t panel_bytes,
               std::size_t block_bytes, Put put) {
  const std::int64_t nb = w.cols / 32;
  const std::size_t rb = row_bytes(w.type, w.cols);
  const auto* src = static_cast<const std::uint8_t*>(w.data);
  for (std::int64_t r = 0; r < w.rows; ++r) {
    const auto* row = reinterpret_cast<const Block*>(src + std::size_t(r) * rb);
    const std::size_t p = std::size_t(r / kPanelRows);
    const int i = int(r % kPanelRows);
    for (std::int64_t b = 0; b < nb; ++b)
      put(dst + p * panel_bytes + std::size_t(b) * block_bytes, i, row[b]);
  }
}

}  // namespace

bool packable(DType t) {
  return t == DType::kQ4_1 || t == DType::kQ8_0;
}

bool repack_supported(DType t) {
  return packable(t) && detail::active_kernels().native_packed;
}

std::size_t packed_panel_bytes(DType t, std::int64_t cols) {
  const std::size_t nb = std::size_t(cols / 32);
  if (t == DType::kQ4_1) return nb * kQ4_1PanelBlock;
  if (t == DType::kQ8_0) return nb * kQ8_0PanelBlock;
  return 0;
}

void AlignedDelete::operator()(std::uint8_t* p) const {
  ::operator delete[](p, std::align_val_t(64));
}

PackedBuffer pack_weights(const WeightView& w) {
  if (!packable(w.type) || w.rows <= 0 || w.cols <= 0 || w.cols % 32 != 0) return PackedBuffer();
  const std::size_t panel = packed_panel_bytes(w.type, w.cols);
  const std::size_t panels = std::size_t((w.rows + kPanelRows - 1) / kPanelRows);
  const std::size_t bytes = panel * panels;
  PackedBuffer buf(static_cast<std::uint8_t*>(::operator new[](bytes, std::align_val_t(64))));
  std::memset(buf.get(), 0, bytes);  // padding rows: zero scales and quants
  if (w.type == DType::kQ4_1) {
    pack_rows<BlockQ4_1>(w, buf.get(), panel, kQ4_1PanelBlock,
                         [](std::uint8_t* blk, int i, const BlockQ4_1& b) {
                           std::memcpy(blk + 2 * i, &b.d, 2);
                           std::memcpy(blk + 32 + 2 * i, &b.m, 2);
                           for (int k = 0; k < 4; ++k)
                             std::memcpy(blk + 64 + 64 * k + 4 * i, b.qs + 4 * k, 4);
                         });
  } else {
    pack_rows<BlockQ8_0>(
        w, buf.get(), panel, kQ8_0PanelBlock, [](std::uint8_t* blk, int i, const BlockQ8_0& b) {
          std::memcpy(blk + 2 * i, &b.d, 2);
          for (int k = 0; k < 8; ++k)
            for (int j = 0; j < 4; ++j)
              blk[32 + 64 * k + 4 * i + j] = std::uint8_t(int(b.qs[4 * k + j]) + 128);
        });
  }
  return buf;
}

namespace detail {

std::int64_t packed_x_second_per_block(DType xt) {
  return xt == DType::kQ8_0 ? 8 : 1;
}

void packed_x_scales(DType xt, const std::uint8_t* x, std::size_t x_stride, std::int64_t n,
                     std::int64_t nb, float* dx, float* second) {
  for (std::int64_t t = 0; t < n; ++t) {
    const std::uint8_t* row = x + std::size_t(t) * x_stride;
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::size_t i = std::size_t(t * nb + b);
      if (xt == DType::kQ8_1) {
        const auto& xb = reinterpret_cast<const BlockQ8_1*>(row)[b];
        dx[i] = fp16_to_fp32(xb.d);
        second[i] = fp16_to_fp32(xb.s);
      } else {
        const auto& xb = reinterpret_cast<const BlockQ8_0*>(row)[b];
        dx[i] = fp16_to_fp32(xb.d);
        for (int j = 0; j < 8; ++j) {
          int sum = 0;
          for (int e = 0; e < 4; ++e) sum += xb.qs[4 * j + e];
          const std::int32_t corr = -128 * sum;  // q + 128 times x, less 128 sum(x)
          std::memcpy(&second[i * 8 + std::size_t(j)], &corr, 4);
        }
      }
    }
  }
}

namespace {

// Packed Q4_1 x Q8_1 / Q8_0 x Q8_0, one row and token at a time (packed.h's operations:
// llama.cpp's 8 lane partial sums, lane j the block's elements 4j .. 4j + 3).
template <bool kQ4_1>
void packed_tile(const std::uint8_t* w, std::size_t panel_bytes, std::int64_t r0, std::int64_t r1,
                 const std::uint8_t* x, std::size_t x_stride, std::int64_t n, std::int64_t cols,
                 float* y, std::int64_t ldy, std::uint64_t) {
  const std::int64_t nb = cols / 32;
  const std::size_t blk_bytes = kQ4_1 ? kQ4_1PanelBlock : kQ8_0PanelBlock;
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::uint8_t* panel = w + std::size_t(r / kPanelRows) * panel_bytes;
    const int i = int(r % kPanelRows);
    for (std::int64_t t = 0; t < n; ++t) {
      const std::uint8_t* xrow = x + std::size_t(t) * x_stride;
      float lane[8] = {};
      float summ = 0.0f;
      for (std::int64_t b = 0; b < nb; ++b) {
        const std::uint8_t* blk = panel + std::size_t(b) * blk_bytes;
        std::uint16_t dh;
        std::memcpy(&dh, blk + 2 * i, 2);
        const float dw = fp16_to_fp32(dh);
        int isum[8] = {};
        float s;
        if constexpr (kQ4_1) {
          const auto& xb = reinterpret_cast<const BlockQ8_1*>(xrow)[b];
          for (int k = 0; k < 4; ++k)
            for (int e = 0; e < 4; ++e) {
              const std::uint8_t q = blk[64 + 64 * k + 4 * i + e];
              isum[k] += int(q & 15) * xb.qs[4 * k + e];
              isum[4 + k] += int(q >> 4) * xb.qs[16 + 4 * k + e];
            }
          std::uint16_t mh;
          std::memcpy(&mh, blk + 32 + 2 * i, 2);
          s = dw * fp16_to_fp32(xb.d);
          summ = std::fma(fp16_to_fp32(mh), fp16_to_fp32(xb.s), summ);
        } else {
          const auto& xb = reinterpret_cast<const BlockQ8_0*>(xrow)[b];
          for (int k = 0; k < 8; ++k)
            for (int e = 0; e < 4; ++e)
              isum[k] += (int(blk[32 + 64 * k + 4 * i + e]) - 128) * xb.qs[4 * k + e];
          s = dw * fp16_to_fp32(xb.d);
        }
        for (int j = 0; j < 8; ++j) lane[j] = std::fma(s, float(isum[j]), lane[j]);
      }
      const float sum =
          ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
      y[t * ldy + r] = kQ4_1 ? sum + summ : sum;
    }
  }
}

}  // namespace

TileFn portable_packed_q4_1() {
  return &packed_tile<true>;
}
TileFn portable_packed_q8_0() {
  return &packed_tile<false>;
}

}  // namespace detail

}  // namespace prima::kernels
