// W4A16 (kernels.h quantize_w4_rows, gemm_w4a16): weights as 4-bit codes with an f16 scale and
// minimum per group of `group` elements of a row (w = q * d + m, q in 0..15: GPTQ/AWQ's
// asymmetric groups), activations in the weights' 16-bit type, float accumulation.
//   quantize: one warp per (row, group): the group's min and max by warp shuffles (exact in any
//     order), d = (max - min) / 15 and m = min rounded to f16, then each code
//     rint((x - m) / d) with the rounded d and m, clamped to 0..15; two codes a byte, element 2b
//     in the low nibble of byte b.
//   GEMM: one warp per (output row, tile of up to 8 tokens): each lane dequantizes 8
//     consecutive weights at a time (one 32-bit word of codes, inside one group since groups are
//     multiples of 32) and multiplies them into the tile's 8 activation rows, so a weight is read
//     once per 8 tokens; float sums in a fixed order (lane strides, then a shuffle tree), so a
//     result does not depend on scheduling. CUDA cores: a tensor-core path (Marlin's layout)
//     would be faster for prefill and is not written.
// Stateless.
#include <cuda_runtime.h>

#include "kernels/cuda/half_math.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.h"

namespace prima::cuda {

namespace {

constexpr int kWarps = 4;      // rows per block of the GEMM
constexpr int kTokenTile = 8;  // tokens per warp

__device__ float load16(bool bf16, const std::uint16_t* x, std::int64_t i) {
  return bf16 ? bfloat_to_float(x[i]) : half_to_float(x[i]);
}

__global__ void quantize_w4_kernel(bool bf16, const std::uint16_t* x, std::int64_t rows,
                                   std::int64_t cols, int group, std::uint8_t* q,
                                   std::uint16_t* dm) {
  const std::int64_t groups = cols / group;
  const std::int64_t g = std::int64_t(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  const int lane = int(threadIdx.x % 32);
  if (g >= rows * groups) return;  // whole warps leave together
  const std::int64_t base = (g / groups) * cols + (g % groups) * group;
  float mn = load16(bf16, x, base + lane), mx = mn;
  for (int j = lane + 32; j < group; j += 32) {
    const float v = load16(bf16, x, base + j);
    mn = fminf(mn, v);
    mx = fmaxf(mx, v);
  }
  for (int off = 16; off > 0; off /= 2) {
    mn = fminf(mn, __shfl_xor_sync(0xffffffffu, mn, off));
    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, off));
  }
  const std::uint16_t dh = float_to_half((mx - mn) / 15.0f), mh = float_to_half(mn);
  const float d = half_to_float(dh), m = half_to_float(mh);
  auto code = [&](int j) {
    const float c = d > 0.0f ? rintf((load16(bf16, x, base + j) - m) / d) : 0.0f;
    return int(fminf(15.0f, fmaxf(0.0f, c)));
  };
  for (int b = lane; b < group / 2; b += 32)
    q[base / 2 + b] = std::uint8_t(code(2 * b) | code(2 * b + 1) << 4);
  if (lane == 0) {
    dm[2 * g] = dh;
    dm[2 * g + 1] = mh;
  }
}

__global__ void gemm_w4a16_kernel(bool bf16, const std::uint16_t* x, const std::uint8_t* q,
                                  const std::uint16_t* dm, int group, std::int64_t rows,
                                  std::int64_t cols, std::int64_t tokens, float* y) {
  const std::int64_t r = std::int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;
  const int lane = int(threadIdx.x % 32);
  if (r >= rows) return;  // whole warps leave together
  const std::int64_t t0 = std::int64_t(blockIdx.y) * kTokenTile;
  const int n = int(tokens - t0 < kTokenTile ? tokens - t0 : kTokenTile);
  const std::uint32_t* words = reinterpret_cast<const std::uint32_t*>(q + r * (cols / 2));
  const std::uint16_t* rdm = dm + 2 * r * (cols / group);
  float acc[kTokenTile] = {};
  for (std::int64_t w = lane; w < cols / 8; w += 32) {
    const std::int64_t k = w * 8;
    const std::int64_t g = k / group;
    const float d = half_to_float(rdm[2 * g]), m = half_to_float(rdm[2 * g + 1]);
    const std::uint32_t bits = words[w];
    float wv[8];
    for (int j = 0; j < 8; ++j) wv[j] = float((bits >> (4 * j)) & 0xfu) * d + m;
    for (int t = 0; t < n; ++t) {
      const std::uint16_t* xr = x + (t0 + t) * cols + k;
      float s = 0.0f;
      for (int j = 0; j < 8; ++j)
        s += wv[j] * (bf16 ? bfloat_to_float(xr[j]) : half_to_float(xr[j]));
      acc[t] += s;
    }
  }
  for (int t = 0; t < n; ++t) {
    float s = acc[t];
    for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
    if (lane == 0) y[(t0 + t) * rows + r] = s;
  }
}

bool half_type(kernels::DType t) {
  return t == kernels::DType::kF16 || t == kernels::DType::kBF16;
}

}  // namespace

int w4_group_size(std::int64_t cols) {
  for (int g : {128, 64, 32})
    if (cols % g == 0) return g;
  return 0;
}

cudaError_t quantize_w4_rows(kernels::DType type, const void* x, std::int64_t rows,
                             std::int64_t cols, int group, std::uint8_t* q, std::uint16_t* dm,
                             cudaStream_t stream) {
  if (!half_type(type) || rows <= 0 || cols <= 0 || (group != 32 && group != 64 && group != 128) ||
      cols % group != 0)
    return cudaErrorInvalidValue;
  constexpr int kWarpsPerBlock = 8;
  const std::int64_t warps = rows * (cols / group);
  const std::int64_t blocks = (warps + kWarpsPerBlock - 1) / kWarpsPerBlock;
  if (blocks > 0x7fffffff) return cudaErrorInvalidValue;
  PRIMA_LAUNCH(quantize_w4_kernel, unsigned(blocks), kWarpsPerBlock * 32, 0, stream,
               type == kernels::DType::kBF16, static_cast<const std::uint16_t*>(x), rows, cols,
               group, q, dm);
  return cudaGetLastError();
}

cudaError_t gemm_w4a16(kernels::DType type, const void* x, const std::uint8_t* q,
                       const std::uint16_t* dm, int group, std::int64_t rows, std::int64_t cols,
                       std::int64_t tokens, float* y, cudaStream_t stream) {
  if (!half_type(type) || rows <= 0 || cols <= 0 || tokens <= 0 ||
      (group != 32 && group != 64 && group != 128) || cols % group != 0)
    return cudaErrorInvalidValue;
  const std::int64_t gx = (rows + kWarps - 1) / kWarps, gy = (tokens + kTokenTile - 1) / kTokenTile;
  if (gx > 0x7fffffff || gy > 65535) return cudaErrorInvalidValue;
  PRIMA_LAUNCH(gemm_w4a16_kernel, dim3(unsigned(gx), unsigned(gy)), kWarps * 32, 0, stream,
               type == kernels::DType::kBF16, static_cast<const std::uint16_t*>(x), q, dm, group,
               rows, cols, tokens, y);
  return cudaGetLastError();
}

}  // namespace prima::cuda
