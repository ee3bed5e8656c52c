// The paged KV cache and attention over it (kernels.h write_kv, paged_attention), in
// kernels/cpu/attention.h's layout and numerics: K and V stored as f16 (nearest even); q
// rounded to f16; scores K.q summed in float and scaled; softmax with llama.cpp's vector
// exponential, the sum in double; probabilities rounded to f16 after the 1/sum scale; the V
// product summed in float. The summation orders are the device's (a KV row's dims in order, a
// thread's positions, a block tree), not the CPU's lanes. Stateless.
#include <cuda_runtime.h>

#include "kernels/cuda/half_math.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/ops_math.h"

namespace prima::cuda {

namespace {

constexpr int kThreads = 128;
constexpr int kMaxHeadDim = 256;

__device__ std::int64_t kv_offset(const kernels::KvLayer& kv, int block, std::int64_t slot,
                                  int head) {
  return std::int64_t(block) * kv.block_size * kv.kv_heads * kv.head_dim +
         (std::int64_t(head) * kv.block_size + slot) * kv.head_dim;
}

// One thread per (token, KV head, dim).
__global__ void write_kv_kernel(kernels::KvLayer kv, const float* k, const float* v,
                                std::int64_t tokens, const int* slots) {
  const std::int64_t row = std::int64_t(kv.kv_heads) * kv.head_dim;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < tokens * row;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t t = i / row, hd = i % row;
    const int head = int(hd / kv.head_dim), d = int(hd % kv.head_dim);
    const int slot = slots[t];
    const std::int64_t off = kv_offset(kv, slot / kv.block_size, slot % kv.block_size, head) + d;
    kv.k[off] = float_to_half(k[i]);
    kv.v[off] = float_to_half(v[i]);
  }
}

// Sum (max when take_max) of every thread's value across the block; all threads get it.
template <typename T>
__device__ T block_reduce(T v, bool take_max, T* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) {
      const T o = shared[threadIdx.x + half];
      shared[threadIdx.x] =
          take_max ? (o > shared[threadIdx.x] ? o : shared[threadIdx.x]) : shared[threadIdx.x] + o;
    }
    __syncthreads();
  }
  const T r = shared[0];
  __syncthreads();
  return r;
}

// One block per (query head, token): scores into the token's scratch row, softmax, V product.
__global__ void attention_kernel(kernels::KvLayer kv, const float* q, int n_heads, float scale,
                                 const int* tables, const int* table_offset, const int* ctx_len,
                                 float* scratch, std::int64_t max_ctx, float* out) {
  __shared__ float qh[kMaxHeadDim];
  __shared__ float fred[kThreads];
  __shared__ double dred[kThreads];
  const int h = int(blockIdx.x), D = kv.head_dim;
  const std::int64_t t = blockIdx.y;
  const int kvh = h / (n_heads / kv.kv_heads);
  const int len = ctx_len[t];
  const int* table = tables + table_offset[t];
  const float* qr = q + (t * n_heads + h) * D;
  float* scores = scratch + (t * n_heads + h) * max_ctx;
  for (int d = int(threadIdx.x); d < D; d += kThreads) qh[d] = half_to_float(float_to_half(qr[d]));
  __syncthreads();
  float m = -INFINITY;
  for (int p = int(threadIdx.x); p < len; p += kThreads) {
    const std::uint16_t* kr =
        kv.k + kv_offset(kv, table[p / kv.block_size], p % kv.block_size, kvh);
    float s = 0.0f;
    for (int d = 0; d < D; ++d) s = fmaf(half_to_float(kr[d]), qh[d], s);
    scores[p] = s * scale;
    m = fmaxf(m, scores[p]);
  }
  const float max = block_reduce(m, true, fred);
  double sum = 0.0;
  for (int p = int(threadIdx.x); p < len; p += kThreads) {
    scores[p] = vexp(scores[p] - max);
    sum += scores[p];
  }
  const float inv = float(1.0 / block_reduce(sum, false, dred));
  for (int p = int(threadIdx.x); p < len; p += kThreads)
    scores[p] = half_to_float(float_to_half(scores[p] * inv));
  __syncthreads();
  for (int d = int(threadIdx.x); d < D; d += kThreads) {
    float acc = 0.0f;
    for (int p = 0; p < len; ++p) {
      const std::uint16_t* vr =
          kv.v + kv_offset(kv, table[p / kv.block_size], p % kv.block_size, kvh);
      acc = fmaf(scores[p], half_to_float(vr[d]), acc);
    }
    out[(t * n_heads + h) * D + d] = acc;
  }
}

}  // namespace

cudaError_t write_kv(const kernels::KvLayer& kv, const float* k, const float* v,
                     std::int64_t tokens, const int* slots, cudaStream_t stream) {
  if (tokens <= 0 || kv.kv_heads <= 0 || kv.head_dim <= 0) return cudaErrorInvalidValue;
  const std::int64_t n = tokens * kv.kv_heads * kv.head_dim;
  const std::int64_t g = (n + 255) / 256;
  PRIMA_LAUNCH(write_kv_kernel, unsigned(g < 4096 ? g : 4096), 256, 0, stream, kv, k, v, tokens,
               slots);
  return cudaGetLastError();
}

cudaError_t paged_attention(const kernels::KvLayer& kv, const float* q, int n_heads, float scale,
                            std::int64_t tokens, const int* tables, const int* table_offset,
                            const int* ctx_len, float* scratch, std::int64_t max_ctx, float* out,
                            cudaStream_t stream) {
  if (tokens <= 0 || tokens > 65535 || n_heads <= 0 || kv.kv_heads <= 0 ||
      n_heads % kv.kv_heads != 0 || kv.head_dim <= 0 || kv.head_dim > kMaxHeadDim)
    return cudaErrorInvalidValue;
  PRIMA_LAUNCH(attention_kernel, dim3(unsigned(n_heads), unsigned(tokens)), kThreads, 0, stream, kv,
               q, n_heads, scale, tables, table_offset, ctx_len, scratch, max_ctx, out);
  return cudaGetLastError();
}

}  // namespace prima::cuda
