// Weights repacked for row-interleaved kernels ("panels"), as llama.cpp repacks its weights
// into its extra buffer types: Q4_1 and Q8_0 matrices copied at load into panels of 16 rows,
// so that one 512-bit integer dot product (vpdpbusd) takes 4 weight bytes of each of 16 rows
// and 4 activation bytes broadcast to every lane. A weight block is then unpacked once for a
// whole panel, and each token pays its conversions and fused multiply-adds once per 16 rows
// (the GGUF-layout kernels pay them per row and need a permute per token pair to spread the
// block scales: docs/kernels.md).
//
// Numerics (every kernel that reads packed weights, every batch size, bit for bit): llama.cpp's
// own, as the GGUF-layout kernels compute them. Per row and token, 8 lane partial sums
// l_0..l_7 from 0, blocks in order; with i_bj the exact integer sum of block b's elements
// 4j .. 4j + 3 (weights times activation quants) and s_b = d_w * d_x:
//   l_j = fma(s_b, float(i_bj), l_j)                     (j = 0..7)
//   Q4_1 x Q8_1 also: m = fma(m_w, s_x, m)               (from 0)
// and y = ((l_0 + l_4) + (l_2 + l_6)) + ((l_1 + l_5) + (l_3 + l_7)) (+ m for Q4_1).
// So `--repack` changes speed and memory, not results.
//
// Panel layout (rows padded to a multiple of 16 with zero rows; nb = cols / 32 blocks; panel p
// holds rows 16p .. 16p+15, its blocks in order, `packed_panel_bytes` apart):
//   Q4_1 block (320 bytes): d[16] f16, m[16] f16, then 4 chunks of 64 bytes: chunk k holds
//        bytes 4k .. 4k+3 of each row's qs, row r at 4r (low nibbles: elements 4k .. 4k+3,
//        high nibbles: elements 16+4k .. 16+4k+3).
//   Q8_0 block (544 bytes): d[16] f16, then 8 chunks of 64 bytes: chunk k holds elements
//        4k .. 4k+3 of each row, row r at 4r, stored as q + 128 (unsigned).
// Stateless functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/cpu/matmul.h"

namespace prima::kernels {

constexpr int kPanelRows = 16;
// Bytes of one block (32 columns) of a panel.
constexpr std::size_t kQ4_1PanelBlock = 320;  // d[16], m[16] f16, 4 x 64 bytes of nibbles
constexpr std::size_t kQ8_0PanelBlock = 544;  // d[16] f16, 8 x 64 bytes of q + 128

// Whether `t` has a packed layout (Q4_1, Q8_0).
bool packable(DType t);
// Whether packing weights of type t pays in this process: packable, and matmul runs the
// AVX-512 kernel set, which has the packed kernels (the CPU has AVX-512 VNNI; PRIMA_KERNELS
// not set to portable, avx2 or avxvnni).
bool repack_supported(DType t);

// Bytes of one panel (16 rows) of a packable type with `cols` columns.
std::size_t packed_panel_bytes(DType t, std::int64_t cols);

struct AlignedDelete {
  void operator()(std::uint8_t* p) const;
};
using PackedBuffer = std::unique_ptr<std::uint8_t[], AlignedDelete>;

// Copies w's rows into panels (64-byte aligned). Null when w's type is not packable.
PackedBuffer pack_weights(const WeightView& w);

}  // namespace prima::kernels
