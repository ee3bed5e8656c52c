// Tests for kernels/cpu/packed.h: Q4_1 and Q8_0 weights packed into 16-row panels. The
// AVX-512 VNNI kernels give the portable packed kernels' bits for every token count, thread
// count and row range (ragged last panel included); a token's outputs do not depend on the
// tokens it shares a call with; every packed product equals the GGUF-layout kernels' (llama.cpp's
// operations) bit for bit, and is within float rounding of a double product of the same
// quantized values; matmul_many over packed weights equals one matmul each; a padded panel
// writes no row beyond the matrix.
#include "kernels/cpu/packed.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "kernels/cpu/matmul_kernels.h"
#include "tests/kernels/cpu/random_data.h"

namespace prima::kernels {
namespace {

struct Shape {
  std::int64_t rows, cols;
};

using testing::randn;

struct Matrix {
  std::vector<std::uint8_t> data;
  PackedBuffer packed;
  WeightView view, unpacked;
};

Matrix make_matrix(DType t, Shape s, std::uint32_t seed) {
  Matrix m;
  const auto f = randn(s.rows * s.cols, seed);
  const std::size_t rb = row_bytes(t, s.cols);
  m.data.resize(rb * std::size_t(s.rows));
  for (std::int64_t r = 0; r < s.rows; ++r)
    quantize_row(t, f.data() + r * s.cols, m.data.data() + std::size_t(r) * rb, s.cols);
  m.unpacked = WeightView{t, m.data.data(), s.rows, s.cols};
  m.packed = pack_weights(m.unpacked);
  m.view = m.unpacked;
  m.view.packed = m.packed.get();
  return m;
}

std::vector<float> run(const detail::MatmulKernels& k, const WeightView& w,
                       const std::vector<float>& x, std::int64_t n, ThreadPool& pool) {
  std::vector<float> y(std::size_t(n * w.rows), -1.0f);
  detail::matmul_with(k, w, x.data(), n, y.data(), pool);
  return y;
}

const detail::MatmulKernels* native() {
  const auto& k = detail::active_kernels();
  return k.native_packed ? &k : nullptr;
}

constexpr DType kTypes[] = {DType::kQ4_1, DType::kQ8_0};
// 224 and 640 columns: rows of 7 and 20 blocks, two more row lengths.
constexpr Shape kShapes[] = {{64, 64}, {40, 96},  {576, 576}, {192, 1536},
                             {33, 32}, {48, 224}, {50, 640}};

TEST(Packed, LayoutAndAvailability) {
  EXPECT_TRUE(packable(DType::kQ4_1));
  EXPECT_TRUE(packable(DType::kQ8_0));
  EXPECT_FALSE(packable(DType::kQ4_0));
  EXPECT_FALSE(packable(DType::kQ6_K));
  EXPECT_EQ(packed_panel_bytes(DType::kQ4_1, 576), 18u * 320u);
  EXPECT_EQ(packed_panel_bytes(DType::kQ8_0, 576), 18u * 544u);
  const WeightView f32{DType::kF32, nullptr, 16, 32};
  EXPECT_EQ(pack_weights(f32), nullptr);
  // Only the AVX-512 VNNI kernels make packing worth it.
  EXPECT_EQ(repack_supported(DType::kQ4_1), native() != nullptr);
  EXPECT_EQ(repack_supported(DType::kQ8_0), native() != nullptr);
  EXPECT_FALSE(repack_supported(DType::kF32));
  if (native() != nullptr) {
    EXPECT_TRUE(detail::cpu_has_avx512_kernels());
  }
}

TEST(Packed, NativeKernelsEqualPortablePackedBitForBit) {
  if (native() == nullptr)
    GTEST_SKIP() << "this CPU has no AVX-512 VNNI (or PRIMA_KERNELS chose another set): "
                    "only the portable packed kernels run here";
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    for (DType t : kTypes)
      for (Shape s : kShapes) {
        const Matrix m = make_matrix(t, s, 7);
        for (std::int64_t n : {1, 2, 7, 8, 9, 19}) {
          const auto x = randn(n * s.cols, std::uint32_t(50 + n));
          const auto want = run(detail::portable_kernels(), m.view, x, n, pool);
          const auto got = run(*native(), m.view, x, n, pool);
          ASSERT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
              << type_traits(t)->name << " " << s.rows << "x" << s.cols << " n=" << n
              << " threads=" << threads;
        }
      }
  }
}

TEST(Packed, EachTokenIsComputedAsIfAlone) {
  ThreadPool pool(2);
  const detail::MatmulKernels& k = native() ? *native() : detail::portable_kernels();
  for (DType t : kTypes)
    for (Shape s : {Shape{576, 576}, Shape{40, 96}}) {
      const Matrix m = make_matrix(t, s, 9);
      const std::int64_t n = 19;
      const auto x = randn(n * s.cols, 123);
      const auto all = run(k, m.view, x, n, pool);
      for (std::int64_t i = 0; i < n; ++i) {
        const std::vector<float> xi(x.begin() + i * s.cols, x.begin() + (i + 1) * s.cols);
        const auto one = run(k, m.view, xi, 1, pool);
        ASSERT_EQ(0, std::memcmp(one.data(), all.data() + i * s.rows, one.size() * sizeof(float)))
            << type_traits(t)->name << " " << s.rows << "x" << s.cols << " token " << i;
      }
    }
}

// Packing changes the memory layout, not the arithmetic: with either packed kernel set (the
// portable one; the AVX-512 one where the CPU has it), every token count and thread count, the
// packed product is the x86 GGUF-layout product (llama.cpp's AVX2 order; its bits are
// llama.cpp's: ReferenceTokens) bit for bit. (The portable GGUF-layout kernels follow
// llama.cpp's scalar order instead, as llama.cpp does on a CPU without AVX2; packing is only
// offered where the AVX-512 kernels run.)
TEST(Packed, EqualsTheGgufLayoutBitForBit) {
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c")))
    GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU: no x86 GGUF-layout kernels to compare with";
  const detail::MatmulKernels& x86 = *detail::avx2_kernels();
  std::vector<const detail::MatmulKernels*> sets{&detail::portable_kernels()};
  if (native() != nullptr) sets.push_back(native());
  for (const auto* k : sets)
    for (int threads : {1, 2}) {
      ThreadPool pool(threads);
      for (DType t : kTypes)
        for (Shape s : kShapes) {
          const Matrix m = make_matrix(t, s, 21);
          for (std::int64_t n : {1, 2, 3, 8, 9, 19}) {
            const auto x = randn(n * s.cols, std::uint32_t(90 + n), 2.0f);
            const auto gguf = run(x86, m.unpacked, x, n, pool);
            const auto packed = run(*k, m.view, x, n, pool);
            ASSERT_EQ(0, std::memcmp(gguf.data(), packed.data(), gguf.size() * sizeof(float)))
                << k->isa << (k->native_packed ? " (native packed)" : "") << " "
                << type_traits(t)->name << " " << s.rows << "x" << s.cols << " n=" << n
                << " threads=" << threads;
          }
        }
    }
}

// Against a double product of the quantized weights and the partner-rounded activations: the
// packed kernels' only error is float rounding of the block terms (plus Q4_1's m_w s_x, with
// s_x an f16).
TEST(Packed, WithinRoundingOfTheExactProduct) {
  ThreadPool pool(1);
  const detail::MatmulKernels& k = native() ? *native() : detail::portable_kernels();
  for (DType t : kTypes)
    for (Shape s : kShapes) {
      const Matrix m = make_matrix(t, s, 3);
      const std::int64_t n = 5;
      const auto x = randn(n * s.cols, 77);
      const auto got = run(k, m.view, x, n, pool);
      const auto unpacked = run(k, m.unpacked, x, n, pool);
      const DType xt = detail::partner_type(t);
      std::vector<std::uint8_t> xb(row_bytes(xt, s.cols));
      std::vector<float> xq(std::size_t(s.cols)), wr(std::size_t(s.cols));
      const std::size_t rb = row_bytes(t, s.cols);
      for (std::int64_t tok = 0; tok < n; ++tok) {
        quantize_row(xt, x.data() + tok * s.cols, xb.data(), s.cols);
        dequantize_row(xt, xb.data(), xq.data(), s.cols);
        for (std::int64_t r = 0; r < s.rows; ++r) {
          dequantize_row(t, m.data.data() + std::size_t(r) * rb, wr.data(), s.cols);
          double exact = 0, abs = 0, mterm = 0;
          for (std::int64_t c = 0; c < s.cols; ++c) {
            exact += double(wr[c]) * xq[c];
            abs += std::fabs(double(wr[c]) * xq[c]);
          }
          if (t == DType::kQ4_1) {
            const auto* wb = reinterpret_cast<const BlockQ4_1*>(m.data.data() + r * rb);
            for (std::int64_t b = 0; b < s.cols / 32; ++b) {
              double bs = 0;
              for (int j = 0; j < 32; ++j) bs += xq[32 * b + j];
              mterm += std::fabs(fp16_to_fp32(wb[b].m) * bs);
            }
          }
          const double bound = 2e-5 * abs + 2e-3 * mterm + 1e-6;
          const std::size_t i = std::size_t(tok * s.rows + r);
          ASSERT_NEAR(got[i], exact, bound) << type_traits(t)->name << " row " << r;
          ASSERT_NEAR(got[i], unpacked[i], 2 * bound) << type_traits(t)->name << " row " << r;
        }
      }
    }
}

TEST(Packed, ManyEqualsOneEachAndRowsStayInside) {
  ThreadPool pool(2);
  const detail::MatmulKernels& k = native() ? *native() : detail::portable_kernels();
  const Matrix q = make_matrix(DType::kQ4_1, {64, 96}, 1);
  const Matrix kk = make_matrix(DType::kQ4_1, {32, 96}, 2);
  const Matrix v = make_matrix(DType::kQ4_1, {40, 96}, 3);  // ragged: its own pass
  for (std::int64_t n : {1, 8, 11}) {
    const auto x = randn(n * 96, 5);
    const WeightView ws[3] = {q.view, kk.view, v.view};
    std::vector<std::vector<float>> ys;
    for (const auto& w : ws) ys.emplace_back(std::size_t(n * w.rows + 16), -7.0f);  // 16 guards
    float* yp[3] = {ys[0].data(), ys[1].data(), ys[2].data()};
    detail::matmul_many_with(k, ws, yp, 3, x.data(), n, pool);
    for (int i = 0; i < 3; ++i) {
      const auto one = run(k, ws[i], x, n, pool);
      ASSERT_EQ(0, std::memcmp(one.data(), ys[i].data(), one.size() * sizeof(float))) << i;
      for (std::size_t g = one.size(); g < ys[i].size(); ++g) ASSERT_EQ(ys[i][g], -7.0f) << i;
    }
  }
}

}  // namespace
}  // namespace prima::kernels
