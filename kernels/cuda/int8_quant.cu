// INT8 W8A8 (kernels.h quantize_i8_rows, dequant_i32): symmetric per-row INT8 codes (a block of
// 256 threads per row: the row's largest magnitude by a warp-shuffle and shared-memory max, then
// each code rint(x / scale) with scale = amax / 127, clamped to +-127), and the INT32 products'
// scaling back to floats (one thread per output). Stateless.
#include <cuda_runtime.h>

#include "kernels/cuda/half_math.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.h"

namespace prima::cuda {

namespace {

constexpr int kThreads = 256;

__device__ float load_value(kernels::DType type, const void* x, std::int64_t i) {
  switch (type) {
    case kernels::DType::kF16:
      return half_to_float(static_cast<const std::uint16_t*>(x)[i]);
    case kernels::DType::kBF16:
      return bfloat_to_float(static_cast<const std::uint16_t*>(x)[i]);
    default:
      return static_cast<const float*>(x)[i];
  }
}

__global__ void quantize_i8_kernel(kernels::DType type, const void* x, std::int64_t cols,
                                   std::int8_t* y, float* scale) {
  __shared__ float warp_max[kThreads / 32];
  const std::int64_t row = blockIdx.x, base = row * cols;
  float m = 0.0f;
  for (std::int64_t c = threadIdx.x; c < cols; c += kThreads)
    m = fmaxf(m, fabsf(load_value(type, x, base + c)));
  for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  float amax = warp_max[0];
  for (int w = 1; w < kThreads / 32; ++w) amax = fmaxf(amax, warp_max[w]);
  const float s = amax / 127.0f;
  for (std::int64_t c = threadIdx.x; c < cols; c += kThreads) {
    float q = s > 0.0f ? rintf(load_value(type, x, base + c) / s) : 0.0f;
    q = fminf(127.0f, fmaxf(-127.0f, q));
    y[base + c] = static_cast<std::int8_t>(q);
  }
  if (threadIdx.x == 0) scale[row] = s;
}

__global__ void dequant_i32_kernel(const std::int32_t* acc, const float* x_scale,
                                   const float* w_scale, std::int64_t m, std::int64_t n, float* y) {
  for (std::int64_t o = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < m * n;
       o += std::int64_t(gridDim.x) * blockDim.x)
    y[o] = float(acc[o]) * (x_scale[o / n] * w_scale[o % n]);
}

}  // namespace

cudaError_t quantize_i8_rows(kernels::DType type, const void* x, std::int64_t rows,
                             std::int64_t cols, std::int8_t* y, float* scale, cudaStream_t stream) {
  if (rows <= 0 || rows > 0x7fffffff || cols <= 0 ||
      (type != kernels::DType::kF32 && type != kernels::DType::kF16 &&
       type != kernels::DType::kBF16))
    return cudaErrorInvalidValue;
  PRIMA_LAUNCH(quantize_i8_kernel, unsigned(rows), kThreads, 0, stream, type, x, cols, y, scale);
  return cudaGetLastError();
}

cudaError_t dequant_i32(const std::int32_t* acc, const float* x_scale, const float* w_scale,
                        std::int64_t m, std::int64_t n, float* y, cudaStream_t stream) {
  if (m <= 0 || n <= 0) return cudaErrorInvalidValue;
  const std::int64_t blocks = (m * n + kThreads - 1) / kThreads;
  PRIMA_LAUNCH(dequant_i32_kernel, unsigned(blocks < 65536 ? blocks : 65536), kThreads, 0, stream,
               acc, x_scale, w_scale, m, n, y);
  return cudaGetLastError();
}

}  // namespace prima::cuda
