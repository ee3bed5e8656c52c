// ReferenceGemm (gemm.h): one thread per output element, its dot product summed in float in
// k order, then scaled and rounded once to the output type (INT8: INT32 sums, exact);
// grid-stride over m x n. Plain CUDA,
// so it runs wherever the kernels run; a yardstick, not a fast path. Also check_shape.
#include <cuda_runtime.h>

#include "kernels/cuda/fp8_e4m3.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/half_math.h"
#include "kernels/cuda/launch.h"

namespace prima::cuda {

namespace {

constexpr int kThreads = 256;

__device__ float load(const void* p, std::int64_t i, GemmType t) {
  switch (t) {
    case GemmType::kF16:
      return half_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case GemmType::kBF16:
      return bfloat_to_float(static_cast<const std::uint16_t*>(p)[i]);
    case GemmType::kFP8E4M3:
      return fp8_e4m3_decode(static_cast<const std::uint8_t*>(p)[i]);
    case GemmType::kF32:
    case GemmType::kI8:  // INT8 products: gemm_i8_kernel
    case GemmType::kI32:
      break;
  }
  return static_cast<const float*>(p)[i];
}

__device__ void store(void* p, std::int64_t i, GemmType t, float v) {
  switch (t) {
    case GemmType::kF16:
      static_cast<std::uint16_t*>(p)[i] = float_to_half(v);
      return;
    case GemmType::kBF16:
      static_cast<std::uint16_t*>(p)[i] = float_to_bfloat(v);
      return;
    case GemmType::kF32:
    case GemmType::kFP8E4M3:  // never an output (check_shape)
    case GemmType::kI8:       // INT8 products: gemm_i8_kernel
    case GemmType::kI32:
      break;
  }
  static_cast<float*>(p)[i] = v;
}

// INT8 x INT8 into INT32, exact.
__global__ void gemm_i8_kernel(GemmShape s, const std::int8_t* x, const std::int8_t* w,
                               std::int32_t* y) {
  for (std::int64_t o = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < s.m * s.n;
       o += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = o / s.n, j = o % s.n;
    std::int32_t acc = 0;
    for (std::int64_t c = 0; c < s.k; ++c)
      acc += std::int32_t(x[i * s.k + c]) * std::int32_t(w[j * s.k + c]);
    y[o] = acc;
  }
}

__global__ void gemm_ref_kernel(GemmShape s, const void* x, const void* w, void* y) {
  const std::int64_t total = s.m * s.n;
  const float scale = s.in == GemmType::kFP8E4M3 ? s.alpha * *s.x_scale * *s.w_scale : s.alpha;
  for (std::int64_t o = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; o < total;
       o += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t i = o / s.n, j = o % s.n;
    float acc = 0.0f;
    for (std::int64_t c = 0; c < s.k; ++c)
      acc = fmaf(load(x, i * s.k + c, s.in), load(w, j * s.k + c, s.in), acc);
    store(y, o, s.out, scale * acc);
  }
}

}  // namespace

std::string check_shape(const GemmShape& s, bool allow_f32_inputs) {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) return "empty shape";
  if (s.in == GemmType::kI8 || s.out == GemmType::kI32) {
    if (s.in != GemmType::kI8 || s.out != GemmType::kI32)
      return "unsupported types: INT8 inputs give INT32, and only they do";
    if (s.alpha != 1.0f) return "INT8 products take alpha 1 (the scales are applied after)";
    if (s.k % 4 != 0) return "INT8 inputs need k a multiple of 4";
    return "";
  }
  if (s.in == GemmType::kFP8E4M3) {
    if (s.out == GemmType::kFP8E4M3) return "unsupported types: FP8 inputs give F32, F16 or BF16";
    if (!s.x_scale || !s.w_scale) return "FP8 inputs need both per-tensor scales";
    if (s.k % 16 != 0) return "FP8 inputs need k a multiple of 16";
    return "";
  }
  if ((s.in == GemmType::kF32 && !allow_f32_inputs) || (s.out != s.in && s.out != GemmType::kF32))
    return "unsupported types: inputs must be F16 or BF16, the output the inputs' type or F32";
  return "";
}

std::string ReferenceGemm::run(const GemmShape& s, const void* x, const void* w, void* y,
                               cudaStream_t stream) {
  if (std::string e = check_shape(s, true); !e.empty()) return e;
  const std::int64_t blocks = (s.m * s.n + kThreads - 1) / kThreads;
  if (s.in == GemmType::kI8) {
    PRIMA_LAUNCH(gemm_i8_kernel, unsigned(blocks < 65536 ? blocks : 65536), kThreads, 0, stream, s,
                 static_cast<const std::int8_t*>(x), static_cast<const std::int8_t*>(w),
                 static_cast<std::int32_t*>(y));
    if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
      return std::string("gemm_i8_kernel: ") + cudaGetErrorString(e);
    return "";
  }
  PRIMA_LAUNCH(gemm_ref_kernel, unsigned(blocks < 65536 ? blocks : 65536), kThreads, 0, stream, s,
               x, w, y);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    return std::string("gemm_ref_kernel: ") + cudaGetErrorString(e);
  return "";
}

}  // namespace prima::cuda
