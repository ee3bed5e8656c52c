// FP8 E4M3 quantization with a per-tensor scale (kernels.h fp8_amax, to_fp8), for FP8 weights
// (once, at upload) and their GEMM's activations (every step): the tensor's largest magnitude
// by a grid-stride max, a warp's shuffles and one atomicMax on the float's bits per block (the
// bits of non-negative floats order as unsigned integers, so any order gives the same
// maximum), then every element encoded as fp8_e4m3.h encodes x / (amax / 448). Stateless.
#include <cuda_runtime.h>

#include "kernels/cuda/fp8_e4m3.h"
#include "kernels/cuda/half_math.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.h"

namespace prima::cuda {

namespace {

constexpr int kThreads = 256;
constexpr std::int64_t kMaxGrid = 4096;

__device__ float load(const void* x, std::int64_t i, kernels::DType t) {
  if (t == kernels::DType::kF16) return half_to_float(static_cast<const std::uint16_t*>(x)[i]);
  if (t == kernels::DType::kBF16) return bfloat_to_float(static_cast<const std::uint16_t*>(x)[i]);
  return static_cast<const float*>(x)[i];
}

__global__ void amax_kernel(const void* x, std::int64_t n, kernels::DType t, unsigned* amax) {
  __shared__ float warp_max[kThreads / 32];
  float m = 0.0f;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    m = fmaxf(m, fabsf(load(x, i, t)));
  for (int off = 16; off > 0; off /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, off));
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = m;
  __syncthreads();
  if (threadIdx.x == 0) {
    for (int w = 1; w < kThreads / 32; ++w) m = fmaxf(m, warp_max[w]);
    atomicMax(amax, __float_as_uint(m));
  }
}

__global__ void to_fp8_kernel(const void* x, std::int64_t n, kernels::DType t, const unsigned* amax,
                              std::uint8_t* y, float* scale) {
  const float s = fp8_e4m3_scale(__uint_as_float(*amax));
  if (blockIdx.x == 0 && threadIdx.x == 0 && scale) *scale = s;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] = fp8_e4m3_encode_scaled(load(x, i, t), s);
}

bool fp8_input(kernels::DType t) {
  return t == kernels::DType::kF32 || t == kernels::DType::kF16 || t == kernels::DType::kBF16;
}

unsigned grid_for(std::int64_t n) {
  const std::int64_t g = (n + kThreads - 1) / kThreads;
  return unsigned(g < kMaxGrid ? g : kMaxGrid);
}

}  // namespace

cudaError_t fp8_amax(kernels::DType type, const void* x, std::int64_t n, unsigned* amax,
                     cudaStream_t stream) {
  if (n <= 0 || !fp8_input(type)) return cudaErrorInvalidValue;
  if (cudaError_t e = cudaMemsetAsync(amax, 0, sizeof(unsigned), stream); e != cudaSuccess)
    return e;
  PRIMA_LAUNCH(amax_kernel, grid_for(n), kThreads, 0, stream, x, n, type, amax);
  return cudaGetLastError();
}

cudaError_t to_fp8(kernels::DType type, const void* x, std::int64_t n, const unsigned* amax,
                   std::uint8_t* y, float* scale, cudaStream_t stream) {
  if (n <= 0 || !fp8_input(type)) return cudaErrorInvalidValue;
  PRIMA_LAUNCH(to_fp8_kernel, grid_for(n), kThreads, 0, stream, x, n, type, amax, y, scale);
  return cudaGetLastError();
}

}  // namespace prima::cuda
