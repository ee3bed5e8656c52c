// Quantized matmul of a batch of tokens (kernels.h matmul_q8): one warp per (output row,
// token); lane l takes the row's blocks l, l + 32, ... and dots each with the token's
// activation block (block_quant.h's block_dot_q8: exact integer sums, one float scale per
// block), and the warp adds the partial sums by shuffles. Stateless.
#include <cuda_runtime.h>

#include "kernels/cuda/block_quant.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.h"

namespace prima::cuda {

namespace {

constexpr int kWarpsPerBlock = 8;

template <typename WBlock, typename XBlock>
__global__ void matmul_q8_kernel(const WBlock* w, const XBlock* x, float* y, std::int64_t rows,
                                 std::int64_t blocks_per_row) {
  const std::int64_t row = std::int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const std::int64_t t = blockIdx.y;
  const int lane = int(threadIdx.x % 32);
  if (row >= rows) return;
  const WBlock* wr = w + row * blocks_per_row;
  const XBlock* xr = x + t * blocks_per_row;
  float sum = 0.0f;
  for (std::int64_t b = lane; b < blocks_per_row; b += 32) sum += block_dot_q8(wr[b], xr[b]);
  for (int off = 16; off > 0; off /= 2) sum += __shfl_down_sync(0xffffffffu, sum, off);
  if (lane == 0) y[t * rows + row] = sum;
}

template <typename WBlock, typename XBlock>
cudaError_t launch(const void* w, const void* x, float* y, std::int64_t rows, std::int64_t cols,
                   std::int64_t tokens, cudaStream_t stream) {
  const dim3 grid(unsigned((rows + kWarpsPerBlock - 1) / kWarpsPerBlock), unsigned(tokens));
  void (*const kernel)(const WBlock*, const XBlock*, float*, std::int64_t, std::int64_t) =
      matmul_q8_kernel<WBlock, XBlock>;
  PRIMA_LAUNCH(kernel, grid, kWarpsPerBlock * 32, 0, stream, static_cast<const WBlock*>(w),
               static_cast<const XBlock*>(x), y, rows, cols / kBlockElems);
  return cudaGetLastError();
}

}  // namespace

cudaError_t matmul_q8(kernels::DType type, const void* w, const void* xq, float* y,
                      std::int64_t rows, std::int64_t cols, std::int64_t tokens,
                      cudaStream_t stream) {
  if (rows <= 0 || cols <= 0 || cols % kBlockElems != 0 || tokens <= 0 || tokens > 65535)
    return cudaErrorInvalidValue;
  switch (type) {
    case kernels::DType::kQ4_0:
      return launch<BlockQ4_0, BlockQ8_0>(w, xq, y, rows, cols, tokens, stream);
    case kernels::DType::kQ4_1:
      return launch<BlockQ4_1, BlockQ8_1>(w, xq, y, rows, cols, tokens, stream);
    case kernels::DType::kQ8_0:
      return launch<BlockQ8_0, BlockQ8_0>(w, xq, y, rows, cols, tokens, stream);
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace prima::cuda
