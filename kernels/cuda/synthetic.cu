// A synthetic model's weights made on the device (kernels.h synthetic_rows): one thread per
// group of 32 elements of a row (a GGUF block), grid-stride; each element from
// synthetic_math.h's counter-based draw and each block quantized by block_quant.h's
// quantize_block, so the bytes are those the host writes into the model's file. Stateless.
#include <cuda_runtime.h>

#include "kernels/cuda/block_quant.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/synthetic_math.h"

namespace prima::cuda {

namespace {

constexpr int kThreads = 256;

template <typename Block>
__device__ void make_block(std::uint64_t st, std::int64_t c0, float half_width, float mean,
                           Block* out) {
  float x[kBlockElems];
  for (int j = 0; j < kBlockElems; ++j) x[j] = synthetic_value(st, c0 + j, half_width, mean);
  quantize_block(x, out);
}

__global__ void synthetic_kernel(kernels::DType type, std::uint64_t seed, std::uint64_t tensor,
                                 std::int64_t row0, std::int64_t rows, std::int64_t cols,
                                 std::int64_t row_bytes, float half_width, float mean,
                                 std::uint8_t* dst) {
  const std::int64_t groups = (cols + kBlockElems - 1) / kBlockElems;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < rows * groups;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t r = i / groups, g = i % groups, c0 = g * kBlockElems;
    const std::uint64_t st = synthetic_row_state(seed, tensor, std::uint64_t(row0 + r));
    std::uint8_t* row = dst + r * row_bytes;
    switch (type) {
      case kernels::DType::kQ4_0:
        make_block(st, c0, half_width, mean, reinterpret_cast<BlockQ4_0*>(row) + g);
        break;
      case kernels::DType::kQ4_1:
        make_block(st, c0, half_width, mean, reinterpret_cast<BlockQ4_1*>(row) + g);
        break;
      case kernels::DType::kQ8_0:
        make_block(st, c0, half_width, mean, reinterpret_cast<BlockQ8_0*>(row) + g);
        break;
      default: {
        const std::int64_t end = c0 + kBlockElems < cols ? c0 + kBlockElems : cols;
        for (std::int64_t c = c0; c < end; ++c) {
          const float v = synthetic_value(st, c, half_width, mean);
          if (type == kernels::DType::kF32)
            reinterpret_cast<float*>(row)[c] = v;
          else if (type == kernels::DType::kF16)
            reinterpret_cast<std::uint16_t*>(row)[c] = float_to_half(v);
          else
            reinterpret_cast<std::uint16_t*>(row)[c] = float_to_bfloat(v);
        }
      }
    }
  }
}

}  // namespace

cudaError_t synthetic_rows(kernels::DType type, std::uint64_t seed, std::uint64_t tensor,
                           std::int64_t row0, std::int64_t rows, std::int64_t cols,
                           float half_width, float mean, void* dst, cudaStream_t stream) {
  const bool block_type = type == kernels::DType::kQ4_0 || type == kernels::DType::kQ4_1 ||
                          type == kernels::DType::kQ8_0;
  const bool plain =
      type == kernels::DType::kF32 || type == kernels::DType::kF16 || type == kernels::DType::kBF16;
  if (rows <= 0 || cols <= 0 || row0 < 0 || !(block_type || plain) ||
      (block_type && cols % kBlockElems))
    return cudaErrorInvalidValue;
  const std::int64_t groups = rows * ((cols + kBlockElems - 1) / kBlockElems);
  const std::int64_t g = (groups + kThreads - 1) / kThreads;
  PRIMA_LAUNCH(synthetic_kernel, unsigned(g < 8192 ? g : 8192), kThreads, 0, stream, type, seed,
               tensor, row0, rows, cols, std::int64_t(kernels::row_bytes(type, cols)), half_width,
               mean, static_cast<std::uint8_t*>(dst));
  return cudaGetLastError();
}

}  // namespace prima::cuda
