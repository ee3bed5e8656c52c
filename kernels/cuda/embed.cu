// Embedding lookup (kernels.h embed): one thread per output element, grid-stride; element c of
// token t is element c % 32 of block c / 32 of the table's row ids[t], dequantized with
// block_quant.h's arithmetic (kernels/cpu's dequantize_row bit for bit). Stateless.
#include <cuda_runtime.h>

#include "kernels/cuda/block_quant.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.h"

namespace prima::cuda {

namespace {

constexpr int kThreads = 256;

__device__ float element(kernels::DType type, const std::uint8_t* row, std::int64_t c) {
  switch (type) {
    case kernels::DType::kQ4_0:
      return dequant(reinterpret_cast<const BlockQ4_0*>(row)[c / kBlockElems],
                     int(c % kBlockElems));
    case kernels::DType::kQ4_1:
      return dequant(reinterpret_cast<const BlockQ4_1*>(row)[c / kBlockElems],
                     int(c % kBlockElems));
    case kernels::DType::kQ8_0:
      return dequant(reinterpret_cast<const BlockQ8_0*>(row)[c / kBlockElems],
                     int(c % kBlockElems));
    case kernels::DType::kF16:
      return half_to_float(reinterpret_cast<const std::uint16_t*>(row)[c]);
    case kernels::DType::kBF16:
      return bfloat_to_float(reinterpret_cast<const std::uint16_t*>(row)[c]);
    default:
      return reinterpret_cast<const float*>(row)[c];
  }
}

__global__ void embed_kernel(kernels::DType type, const std::uint8_t* table, std::int64_t row_bytes,
                             std::int64_t cols, const int* ids, std::int64_t tokens, float* out) {
  const std::int64_t total = tokens * cols;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t t = i / cols, c = i % cols;
    out[i] = element(type, table + std::int64_t(ids[t]) * row_bytes, c);
  }
}

}  // namespace

cudaError_t embed(kernels::DType type, const void* table, std::int64_t row_bytes, std::int64_t cols,
                  const int* ids, std::int64_t tokens, float* out, cudaStream_t stream) {
  const bool block_type = type == kernels::DType::kQ4_0 || type == kernels::DType::kQ4_1 ||
                          type == kernels::DType::kQ8_0;
  const bool plain =
      type == kernels::DType::kF32 || type == kernels::DType::kF16 || type == kernels::DType::kBF16;
  if (tokens <= 0 || cols <= 0 || !(block_type || plain) || (block_type && cols % kBlockElems))
    return cudaErrorInvalidValue;
  const std::int64_t g = (tokens * cols + kThreads - 1) / kThreads;
  PRIMA_LAUNCH(embed_kernel, unsigned(g < 4096 ? g : 4096), kThreads, 0, stream, type,
               static_cast<const std::uint8_t*>(table), row_bytes, cols, ids, tokens, out);
  return cudaGetLastError();
}

}  // namespace prima::cuda
