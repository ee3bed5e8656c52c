// Dequantizing GEMV for decode (kernels.h): one warp per output row; lane l takes the row's
// blocks l, l + 32, ...; each block is dequantized with block_quant.h's functions and dotted
// with x, and the warp's partial sums are added by shuffles. Stateless.
#include <cuda_runtime.h>

#include "kernels/cuda/block_quant.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.h"

namespace prima::cuda {

namespace {

constexpr int kWarpsPerBlock = 8;

template <typename Block>
__global__ void gemv_kernel(const Block* w, const float* x, float* y, std::int64_t rows,
                            std::int64_t blocks_per_row) {
  const std::int64_t row = std::int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const Block* wr = w + row * blocks_per_row;
  float sum = 0.0f;
  for (std::int64_t b = lane; b < blocks_per_row; b += 32)
    sum += block_dot(wr[b], x + b * kBlockElems);
  for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off);
  if (lane == 0) y[row] = sum;
}

template <typename Block>
cudaError_t launch(const void* w, const float* x, float* y, std::int64_t rows, std::int64_t cols,
                   cudaStream_t stream) {
  const std::int64_t grid = (rows + kWarpsPerBlock - 1) / kWarpsPerBlock;
  PRIMA_LAUNCH(gemv_kernel<Block>, unsigned(grid), kWarpsPerBlock * 32, 0, stream,
               static_cast<const Block*>(w), x, y, rows, cols / kBlockElems);
  return cudaGetLastError();
}

}  // namespace

cudaError_t gemv_quant(kernels::DType type, const void* w, const float* x, float* y,
                       std::int64_t rows, std::int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0 || cols % kBlockElems != 0) return cudaErrorInvalidValue;
  switch (type) {
    case kernels::DType::kQ4_0:
      return launch<BlockQ4_0>(w, x, y, rows, cols, stream);
    case kernels::DType::kQ4_1:
      return launch<BlockQ4_1>(w, x, y, rows, cols, stream);
    case kernels::DType::kQ8_0:
      return launch<BlockQ8_0>(w, x, y, rows, cols, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace prima::cuda
