// Tests for kernels/cpu/matmul.h: every weight type against the dequantize-and-double
// reference, on the model's shapes and ragged ones, n = 1 and ragged n, 1 and 3 threads;
// the portable, AVX2 and AVX-VNNI kernel sets agree with each other; row views (tensor-parallel
// splits) equal the corresponding rows of the full product; matmul_many equals one matmul per
// weight bit for bit.
#include "kernels/cpu/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/matmul_kernels.h"
#include "tests/kernels/cpu/random_data.h"

namespace prima::kernels {
namespace {

struct Case {
  DType type;
  std::int64_t rows, cols;
};

using testing::randn;

// The portable kernel set and every x86 set this CPU can run.
std::vector<const detail::MatmulKernels*> runnable_sets() {
  std::vector<const detail::MatmulKernels*> sets{&detail::portable_kernels()};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c")) {
    sets.push_back(detail::avx2_kernels());
    if (__builtin_cpu_supports("avxvnni")) sets.push_back(detail::avxvnni_kernels());
    if (detail::cpu_has_avx512_kernels()) sets.push_back(detail::avx512_kernels());
  }
  return sets;
}

std::vector<std::uint8_t> make_weights(DType t, std::int64_t rows, std::int64_t cols,
                                       std::uint32_t seed) {
  const auto f = randn(rows * cols, seed);
  std::vector<std::uint8_t> w(row_bytes(t, cols) * std::size_t(rows));
  for (std::int64_t r = 0; r < rows; ++r)
    quantize_row(t, f.data() + r * cols, w.data() + std::size_t(r) * row_bytes(t, cols), cols);
  return w;
}

// Reference products and per-output error bounds. The activations are first rounded
// through the partner format (as the kernels do); against those, the kernels differ only by
// float rounding (tight bound). Against the raw activations, each term's error is bounded by
// the activation's rounding error: 0.57 of a step for 8-bit blocks (half a step plus the f16
// rounding of the scale), 2^-11 or 2^-8 relative for f16 / bf16.
struct Reference {
  std::vector<float> y;       // with partner-rounded activations
  std::vector<double> tight;  // bound vs y
  std::vector<double> loose;  // bound vs matmul_reference (raw activations)
};

Reference partner_reference(const WeightView& w, const std::vector<float>& x, std::int64_t n) {
  const DType xt = detail::partner_type(w.type);
  const std::int64_t cols = w.cols;
  std::vector<float> xq(x.size()), step(x.size());
  std::vector<float> wr(static_cast<std::size_t>(cols));
  std::vector<std::uint8_t> buf(row_bytes(xt, cols));
  const int be = type_traits(xt)->block_elems;
  for (std::int64_t t = 0; t < n; ++t) {
    quantize_row(xt, x.data() + t * cols, buf.data(), cols);
    dequantize_row(xt, buf.data(), xq.data() + t * cols, cols);
    for (std::int64_t b = 0; b < cols; b += be) {
      float amax = 0;
      for (int j = 0; j < be; ++j) amax = std::max(amax, std::fabs(x[t * cols + b + j]));
      for (int j = 0; j < be; ++j) {
        const float xv = std::fabs(x[t * cols + b + j]);
        float e = 0;
        if (xt == DType::kF16)
          e = xv * 0x1p-11f;
        else if (xt == DType::kBF16)
          e = xv * 0x1p-8f;
        else if (xt != DType::kF32)
          e = 0.57f * amax / 127.0f;
        step[t * cols + b + j] = e;
      }
    }
  }
  Reference ref;
  ref.y.resize(std::size_t(n * w.rows));
  ref.tight.resize(ref.y.size());
  ref.loose.resize(ref.y.size());
  const std::size_t stride = row_bytes(w.type, cols);
  for (std::int64_t r = 0; r < w.rows; ++r) {
    const auto* row = static_cast<const std::uint8_t*>(w.data) + std::size_t(r) * stride;
    dequantize_row(w.type, row, wr.data(), cols);
    for (std::int64_t t = 0; t < n; ++t) {
      double s = 0, abs = 0, loose = 0, mterm = 0;
      for (std::int64_t c = 0; c < cols; ++c) {
        s += double(wr[c]) * xq[t * cols + c];
        abs += std::fabs(double(wr[c]) * xq[t * cols + c]);
        loose += std::fabs(double(wr[c])) * step[t * cols + c];
      }
      if (w.type == DType::kQ4_1) {  // m_w * s_x with s_x stored as f16 of the unrounded d
        const auto* wb = reinterpret_cast<const BlockQ4_1*>(row);
        for (std::int64_t b = 0; b < cols / 32; ++b) {
          double bs = 0;
          for (int j = 0; j < 32; ++j) bs += xq[t * cols + 32 * b + j];
          mterm += std::fabs(fp16_to_fp32(wb[b].m) * bs);
        }
      }
      const std::size_t i = std::size_t(t * w.rows + r);
      ref.y[i] = float(s);
      ref.tight[i] = 2e-5 * abs + 2e-3 * mterm + 1e-6;
      ref.loose[i] = loose + ref.tight[i];
    }
  }
  return ref;
}

class MatmulTest : public ::testing::TestWithParam<Case> {};

TEST_P(MatmulTest, MatchesReference) {
  const Case c = GetParam();
  const auto w = make_weights(c.type, c.rows, c.cols, 11);
  const WeightView view{c.type, w.data(), c.rows, c.cols};
  for (std::int64_t n : {1, 2, 5, 8, 13, 70}) {
    const auto x = randn(n * c.cols, std::uint32_t(100 + n));
    std::vector<float> raw(std::size_t(n * c.rows));
    matmul_reference(view, x.data(), n, raw.data());
    const Reference ref = partner_reference(view, x, n);
    for (std::size_t i = 0; i < raw.size(); ++i)
      ASSERT_NEAR(ref.y[i], raw[i], ref.loose[i]) << "reference self-check, index " << i;
    for (int threads : {1, 3}) {
      ThreadPool pool(threads);
      const std::vector<const detail::MatmulKernels*> sets = runnable_sets();
      std::vector<std::vector<float>> outs;
      for (const auto* k : sets) {
        std::vector<float> y(std::size_t(n * c.rows), NAN);
        detail::matmul_with(*k, view, x.data(), n, y.data(), pool);
        for (std::size_t i = 0; i < y.size(); ++i)
          ASSERT_NEAR(y[i], ref.y[i], ref.tight[i])
              << k->isa << " n=" << n << " threads=" << threads << " index " << i;
        outs.push_back(std::move(y));
      }
      // Every x86 set (AVX2, AVX-VNNI, AVX-512) gives the same bits: the same integer block
      // sums and the same float operations.
      for (std::size_t s = 2; s < outs.size(); ++s)
        for (std::size_t i = 0; i < outs[1].size(); ++i)
          ASSERT_EQ(outs[s][i], outs[1][i]) << sets[s]->isa << " set " << s << " index " << i;
      // Portable and AVX2 compute the same integer block sums; only float summation order
      // differs.
      for (std::size_t s = 1; s < outs.size(); ++s)
        for (std::size_t i = 0; i < outs[0].size(); ++i)
          ASSERT_NEAR(outs[s][i], outs[0][i], 1e-4 * (1.0 + std::fabs(outs[0][i])));
      std::vector<float> y(std::size_t(n * c.rows));
      matmul(view, x.data(), n, y.data(), pool);  // the dispatched kernels
      for (std::size_t i = 0; i < y.size(); ++i) ASSERT_NEAR(y[i], ref.y[i], ref.tight[i]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Types, MatmulTest,
    ::testing::Values(Case{DType::kQ4_1, 576, 576}, Case{DType::kQ4_1, 192, 576},
                      Case{DType::kQ4_1, 67, 1536}, Case{DType::kQ4_0, 97, 576},
                      Case{DType::kQ8_0, 576, 576}, Case{DType::kQ8_0, 33, 1536},
                      Case{DType::kQ6_K, 50, 512}, Case{DType::kF32, 40, 96},
                      Case{DType::kF16, 41, 576}, Case{DType::kBF16, 17, 64}),
    [](const auto& info) {
      return std::string(type_traits(info.param.type)->name) + "_" +
             std::to_string(info.param.rows) + "x" + std::to_string(info.param.cols);
    });

TEST(Matmul, Q4_1BlockDotIsExactOnIntegerData) {
  // Weights and activations that quantize exactly: the block formula d_w d_x sum(qw qx) +
  // m_w s_x must give the exact product.
  const std::int64_t cols = 64;
  std::vector<float> wf(cols), x(cols);
  for (int i = 0; i < cols; ++i) {
    wf[i] = float(i % 16) * 0.5f - 2.0f;  // min -2, max 5.5, d = 0.5: exact in Q4_1
    x[i] = float((i * 37) % 255 - 127);   // amax 127 in each block: d = 1
  }
  for (int b = 0; b < 2; ++b) x[32 * b] = 127.0f;
  std::vector<BlockQ4_1> w(2);
  quantize_row(DType::kQ4_1, wf.data(), w.data(), cols);
  double exact = 0;
  for (int i = 0; i < cols; ++i) exact += double(wf[i]) * x[i];
  ThreadPool pool(1);
  float y = 0;
  matmul({DType::kQ4_1, w.data(), 1, cols}, x.data(), 1, &y, pool);
  EXPECT_NEAR(y, exact, std::fabs(exact) * 1e-3);  // s_x is stored as f16
}

TEST(Matmul, RowViewEqualsRowsOfFullProduct) {
  const std::int64_t rows = 96, cols = 576, n = 3;
  const auto w = make_weights(DType::kQ4_1, rows, cols, 5);
  const auto x = randn(n * cols, 6);
  ThreadPool pool(2);
  std::vector<float> full(std::size_t(n * rows)), part(std::size_t(n * 32));
  matmul({DType::kQ4_1, w.data(), rows, cols}, x.data(), n, full.data(), pool);
  const WeightView view{DType::kQ4_1, w.data() + 40 * row_bytes(DType::kQ4_1, cols), 32, cols};
  matmul(view, x.data(), n, part.data(), pool);
  for (std::int64_t t = 0; t < n; ++t)
    for (std::int64_t r = 0; r < 32; ++r) EXPECT_EQ(part[t * 32 + r], full[t * rows + 40 + r]);
}

TEST(Matmul, KernelIsaIsNamed) {
  const std::string isa = kernel_isa();
  EXPECT_TRUE(isa == "avx2" || isa == "portable") << isa;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c") && std::getenv("PRIMA_KERNELS") == nullptr) {
    EXPECT_EQ(isa, "avx2");
  }
}

}  // namespace
}  // namespace prima::kernels

namespace prima::kernels {
namespace {

// Batch invariance: a token's outputs do not depend on how many tokens share the call (the
// serving engine batches requests; greedy output must not change with load). Each kernel set
// computes every token's dot products in one fixed float operation order, whichever tile
// (1, 2..4, 8 tokens) takes it: the n-token product equals n one-token products bit for bit.
TEST(Matmul, EachTokenIsComputedAsIfAlone) {
  for (DType t : {DType::kQ4_1, DType::kQ4_0, DType::kQ8_0, DType::kQ6_K, DType::kF16, DType::kF32,
                  DType::kBF16}) {
    // 576 columns: the 8-token kernel's multi-row passes; 1536: its one-row passes.
    for (const std::int64_t cols :
         {std::int64_t(t == DType::kQ6_K ? 512 : 576), std::int64_t(1536)}) {
      const std::int64_t rows = 37;
      const auto w = make_weights(t, rows, cols, 21);
      const WeightView view{t, w.data(), rows, cols};
      const std::vector<const detail::MatmulKernels*> sets = runnable_sets();
      for (const auto* k : sets)
        for (int threads : {1, 2}) {
          ThreadPool pool(threads);
          const std::int64_t n = 19;  // 8 + 8 + 3: every tile shape
          const auto x = randn(n * cols, 77);
          std::vector<float> y(std::size_t(n * rows));
          detail::matmul_with(*k, view, x.data(), n, y.data(), pool);
          for (std::int64_t tok = 0; tok < n; ++tok) {
            std::vector<float> one(static_cast<std::size_t>(rows));
            detail::matmul_with(*k, view, x.data() + tok * cols, 1, one.data(), pool);
            for (std::int64_t r = 0; r < rows; ++r)
              ASSERT_EQ(one[r], y[tok * rows + r])
                  << type_traits(t)->name << " " << k->isa << " threads=" << threads << " token "
                  << tok << " row " << r << " cols " << cols;
          }
        }
    }
  }
}

// matmul_many (Q, K and V in one job) gives each weight exactly matmul's result, whatever the
// row counts (ranges that span matrices, rows not a multiple of 4), token counts and threads;
// weights of different types fall back to one matmul each.
TEST(Matmul, ManyEqualsOneMatmulPerWeight) {
  std::vector<const detail::MatmulKernels*> sets{&detail::portable_kernels()};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c")) {
    sets.push_back(detail::avx2_kernels());
    if (detail::cpu_has_avx512_kernels()) sets.push_back(detail::avx512_kernels());
  }
  const std::int64_t cols = 576;
  struct Mix {
    DType types[3];
    std::int64_t rows[3];
  };
  for (const Mix& m : {Mix{{DType::kQ4_1, DType::kQ4_1, DType::kQ4_1}, {576, 192, 192}},
                       Mix{{DType::kQ4_1, DType::kQ4_1, DType::kQ4_1}, {9, 3, 5}},
                       Mix{{DType::kQ8_0, DType::kQ8_0, DType::kQ8_0}, {37, 1, 130}},
                       Mix{{DType::kQ4_1, DType::kQ8_0, DType::kQ4_1}, {64, 32, 16}}}) {
    std::vector<std::vector<std::uint8_t>> w;
    WeightView views[3];
    for (int i = 0; i < 3; ++i) {
      w.push_back(make_weights(m.types[i], m.rows[i], cols, 40 + i));
      views[i] = WeightView{m.types[i], w.back().data(), m.rows[i], cols};
    }
    for (const auto* k : sets)
      for (int threads : {1, 3})
        for (std::int64_t n : {1, 3, 8, 19}) {
          ThreadPool pool(threads);
          const auto x = randn(n * cols, 78);
          std::vector<float> many[3], one[3];
          float* ys[3];
          for (int i = 0; i < 3; ++i) {
            many[i].assign(std::size_t(n * m.rows[i]), -1.0f);
            one[i].assign(std::size_t(n * m.rows[i]), -2.0f);
            ys[i] = many[i].data();
            detail::matmul_with(*k, views[i], x.data(), n, one[i].data(), pool);
          }
          detail::matmul_many_with(*k, views, ys, 3, x.data(), n, pool);
          for (int i = 0; i < 3; ++i)
            for (std::size_t j = 0; j < one[i].size(); ++j)
              ASSERT_EQ(one[i][j], many[i][j])
                  << k->isa << " rows " << m.rows[0] << "/" << m.rows[1] << "/" << m.rows[2]
                  << " n=" << n << " threads=" << threads << " weight " << i << " index " << j;
        }
  }
}

}  // namespace
}  // namespace prima::kernels
