// Activation quantization (kernels.h quantize_q8, and to_half for F16/BF16 weights): one warp per
// 32-element block, lane j holds element j; the block's largest magnitude and the integer sum come
// from warp shuffles (exact in any order), the codes from rintf (nearest, ties to even), so the
// blocks are kernels/cpu's bit for bit. Stateless.
#include <cuda_runtime.h>

#include "kernels/cuda/block_quant.h"
#include "kernels/cuda/half_math.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.h"

namespace prima::cuda {

namespace {

constexpr int kWarpsPerBlock = 8;

template <typename Block>
__global__ void quantize_q8_kernel(const float* x, Block* y, std::int64_t blocks) {
  const std::int64_t b = std::int64_t(blockIdx.x) * kWarpsPerBlock + threadIdx.x / 32;
  const int lane = int(threadIdx.x % 32);
  if (b >= blocks) return;
  const float v = x[b * kBlockElems + lane];
  float amax = fabsf(v);
  for (int off = 16; off > 0; off /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, off));
  const float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  const int q = int(rintf(v * id));
  y[b].qs[lane] = std::int8_t(q);
  int sum = q;
  for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
  if (lane == 0) {
    y[b].d = float_to_half(d);
    if constexpr (sizeof(Block) == sizeof(BlockQ8_1)) y[b].s = float_to_half(d * float(sum));
  }
}

template <typename Block>
cudaError_t launch(const float* x, void* y, std::int64_t blocks, cudaStream_t stream) {
  const std::int64_t grid = (blocks + kWarpsPerBlock - 1) / kWarpsPerBlock;
  PRIMA_LAUNCH(quantize_q8_kernel<Block>, unsigned(grid), kWarpsPerBlock * 32, 0, stream, x,
               static_cast<Block*>(y), blocks);
  return cudaGetLastError();
}

__global__ void to_half_kernel(const float* x, std::uint16_t* y, std::int64_t n, bool bf16) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] = bf16 ? float_to_bfloat(x[i]) : float_to_half(x[i]);
}

}  // namespace

cudaError_t to_half(kernels::DType type, const float* x, void* y, std::int64_t n,
                    cudaStream_t stream) {
  if (n <= 0 || (type != kernels::DType::kF16 && type != kernels::DType::kBF16))
    return cudaErrorInvalidValue;
  constexpr int kThreads = 256;
  const std::int64_t g = (n + kThreads - 1) / kThreads;
  PRIMA_LAUNCH(to_half_kernel, unsigned(g < 4096 ? g : 4096), kThreads, 0, stream, x,
               static_cast<std::uint16_t*>(y), n, type == kernels::DType::kBF16);
  return cudaGetLastError();
}

kernels::DType activation_type(kernels::DType weight_type) {
  return weight_type == kernels::DType::kQ4_1 ? kernels::DType::kQ8_1 : kernels::DType::kQ8_0;
}

cudaError_t quantize_q8(kernels::DType type, const float* x, void* y, std::int64_t rows,
                        std::int64_t cols, cudaStream_t stream) {
  if (rows <= 0 || cols <= 0 || cols % kBlockElems != 0) return cudaErrorInvalidValue;
  const std::int64_t blocks = rows * cols / kBlockElems;
  if (type == kernels::DType::kQ8_0) return launch<BlockQ8_0>(x, y, blocks, stream);
  if (type == kernels::DType::kQ8_1) return launch<BlockQ8_1>(x, y, blocks, stream);
  return cudaErrorInvalidValue;
}

}  // namespace prima::cuda
