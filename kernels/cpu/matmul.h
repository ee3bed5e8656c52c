// Matrix products with quantized weights: y = x W^T, the linear layers of the forward pass.
//
// W is `rows` x `cols` (rows = output features; GGUF dims are {cols, rows}, cols innermost),
// each row `row_bytes(type, cols)` bytes, in any supported type (F32, F16, BF16, Q4_0, Q4_1,
// Q8_0, Q6_K). x is n x cols floats (row-major), y is n x rows floats.
//
// Numerics follow llama.cpp's CPU path so greedy decoding agrees with it: the activations are
// first quantized to the weight type's dot-product partner (Q4_0, Q8_0 -> Q8_0; Q4_1 -> Q8_1;
// Q6_K -> Q8_K; F16 -> F16; BF16 -> BF16; F32 -> F32) and the dot products run on the blocks
// (integer products, one float scale per block). Kernels are chosen at run time: AVX2/FMA
// where the CPU has them, portable code otherwise (PRIMA_KERNELS=portable forces the latter;
// both must agree with the scalar reference).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/quant.h"
#include "kernels/cpu/thread_pool.h"

namespace prima::kernels {

struct WeightView {
  DType type = DType::kF32;
  const void* data = nullptr;
  std::int64_t rows = 0;  // output features
  std::int64_t cols = 0;  // input features (multiple of the type's block size)
  // A contiguous range of rows [row_begin, row_begin + rows) of a bigger matrix is a view
  // with data advanced by row_begin * row_bytes(type, cols) (tensor-parallel column split).
  // The same rows packed into 16-row panels (packed.h), or null: matmul then reads these,
  // with the packed numerics; `data` stays valid (embedding lookups read it).
  const std::uint8_t* packed = nullptr;
};

// y[t * rows + r] = sum_c x[t * cols + c] * W[r][c] for t < n.
void matmul(const WeightView& w, const float* x, std::int64_t n, float* y, ThreadPool& pool);

// Several products of the same activation rows: y[i] = x W_i^T for i < count, each exactly as
// matmul(w[i], x, n, y[i]) computes it. When the weights share their type and column count
// (Q, K and V; gate and up), x is converted once and the rows of all of them are split over
// the pool in one job (one dispatch instead of `count`); otherwise one matmul each.
void matmul_many(const WeightView* w, float* const* y, int count, const float* x, std::int64_t n,
                 ThreadPool& pool);

// Reference: dequantize each row and accumulate in double; for tests.
void matmul_reference(const WeightView& w, const float* x, std::int64_t n, float* y);

// Which implementation matmul uses on this CPU: "avx2" or "portable".
const char* kernel_isa();

}  // namespace prima::kernels
