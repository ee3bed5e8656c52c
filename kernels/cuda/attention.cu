// The paged KV cache and attention over it (kernels.h write_kv, paged_attention), in
// kernels/cpu/attention.h's layout and numerics: K and V stored as f16 (nearest even); q rounded
// to f16; scores K.q summed in float over the head's dims in order and scaled; softmax with
// llama.cpp's vector exponential, the sum in double; probabilities rounded to f16 after the
// 1/sum scale; the V product summed in float in position order. The sum's order is a row's
// positions in order, not the CPU's lanes. Stateless.
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

// One block per (query head, tile of up to kAttentionTileRows rows of one sequence),
// FlashAttention's tiling on CUDA cores: the tile's queries stay in shared memory while the
// context streams through it in tiles of kc positions (K and V as f16); the scores never go to
// global memory. To keep the CPU kernel's numerics (each probability normalised, then rounded to
// f16, before the V product), the context streams three times: the rows' maxima, their sums of
// vexp(s - max) in double, then the probabilities and the V product. Positions at or past a
// row's context length (causal) are skipped.
__global__ void attention_kernel(kernels::KvLayer kv, const float* q, int n_heads, float scale,
                                 const int* tables, const int* table_offset, const int* ctx_len,
                                 const int* tiles, float* out) {
  constexpr int R = kAttentionTileRows;
  __shared__ std::uint16_t sq[R * kMaxHeadDim];         // the rows' queries, rounded to f16
  __shared__ std::uint16_t sk[32 * 128], sv[32 * 128];  // kc x D of K and V (kc x D <= 4096)
  __shared__ float acc[R * kMaxHeadDim];                // the rows' outputs
  __shared__ float sp[R * 32];                          // scores, then probabilities
  __shared__ float m[R], inv[R];
  __shared__ double l[R];
  __shared__ int len_max;
  const int h = int(blockIdx.x), D = kv.head_dim, kc = D <= 128 ? 32 : 16;
  const int r0 = tiles[2 * blockIdx.y], nr = tiles[2 * blockIdx.y + 1];
  const int kvh = h / (n_heads / kv.kv_heads);
  const int* table = tables + table_offset[r0];
  const int t = int(threadIdx.x);
  for (int e = t; e < nr * D; e += kThreads) {
    sq[e] = float_to_half(q[(std::int64_t(r0 + e / D) * n_heads + h) * D + e % D]);
    acc[e] = 0.0f;
  }
  if (t < nr) {
    m[t] = -INFINITY;
    l[t] = 0.0;
  }
  if (t == 0) {
    int most = 0;
    for (int i = 0; i < nr; ++i) most = ctx_len[r0 + i] > most ? ctx_len[r0 + i] : most;
    len_max = most;
  }
  __syncthreads();
  for (int pass = 0; pass < 3; ++pass) {
    for (int p0 = 0; p0 < len_max; p0 += kc) {
      const int nc = len_max - p0 < kc ? len_max - p0 : kc;
      for (int e = t; e < nc * D; e += kThreads) {
        const int p = p0 + e / D;
        const std::int64_t off =
            kv_offset(kv, table[p / kv.block_size], p % kv.block_size, kvh) + e % D;
        sk[e] = kv.k[off];
        if (pass == 2) sv[e] = kv.v[off];
      }
      __syncthreads();
      for (int e = t; e < nr * kc; e += kThreads) {
        const int i = e / kc, j = e % kc;
        float s = -INFINITY;
        if (j < nc && p0 + j < ctx_len[r0 + i]) {
          float dot = 0.0f;
          for (int d = 0; d < D; ++d)
            dot = fmaf(half_to_float(sk[j * D + d]), half_to_float(sq[i * D + d]), dot);
          s = dot * scale;
        }
        sp[e] = s;
      }
      __syncthreads();
      if (t < nr) {
        float* row = sp + t * kc;
        if (pass == 0) {
          for (int j = 0; j < nc; ++j) m[t] = fmaxf(m[t], row[j]);
        } else if (pass == 1) {
          for (int j = 0; j < nc; ++j)
            if (row[j] != -INFINITY) l[t] += vexp(row[j] - m[t]);
        } else {
          for (int j = 0; j < nc; ++j)
            row[j] = row[j] == -INFINITY
                         ? 0.0f
                         : half_to_float(float_to_half(vexp(row[j] - m[t]) * inv[t]));
        }
      }
      __syncthreads();
      if (pass == 2) {
        for (int e = t; e < nr * D; e += kThreads) {
          const int i = e / D, d = e % D;
          float o = acc[e];
          for (int j = 0; j < nc; ++j) o = fmaf(sp[i * kc + j], half_to_float(sv[j * D + d]), o);
          acc[e] = o;
        }
        __syncthreads();
      }
    }
    if (pass == 1 && t < nr) inv[t] = float(1.0 / l[t]);
    __syncthreads();
  }
  for (int e = t; e < nr * D; e += kThreads)
    out[(std::int64_t(r0 + e / D) * n_heads + h) * D + e % D] = acc[e];
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
                            const int* ctx_len, const int* tiles, int n_tiles, float* out,
                            cudaStream_t stream) {
  if (tokens <= 0 || n_tiles <= 0 || n_tiles > 65535 || n_tiles > tokens || n_heads <= 0 ||
      kv.kv_heads <= 0 || n_heads % kv.kv_heads != 0 || kv.head_dim <= 0 ||
      kv.head_dim > kMaxHeadDim)
    return cudaErrorInvalidValue;
  PRIMA_LAUNCH(attention_kernel, dim3(unsigned(n_heads), unsigned(n_tiles)), kThreads, 0, stream,
               kv, q, n_heads, scale, tables, table_offset, ctx_len, tiles, out);
  return cudaGetLastError();
}

}  // namespace prima::cuda
