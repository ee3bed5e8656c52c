// Prefill attention on tensor cores (kernels.h paged_attention_mma): FlashAttention-2's loop with
// WMMA 16x16x16 products (f16 inputs, float accumulation). One block of 4 warps per (query head,
// tile of up to 64 rows of one sequence); each warp owns 16 rows. The tile's queries (rounded to
// f16, as the CPU kernel rounds them) stay in shared memory; the context streams through in tiles
// of 64 positions of K and V (f16, the paged cache's values, positions past the tile's longest
// context zero-filled):
//   S = Q K^T on tensor cores into shared memory; per row the causal mask (positions at or past
//   the row's context length), the running maximum m, the rescale alpha = exp(m_old - m_new), the
//   running sum l of exp(s - m_new) in float and the probabilities rounded to f16; the row's
//   output accumulator (float, shared memory) scaled by alpha, then O += P V on tensor cores.
//   The output is O / l.
// An online softmax: the probabilities are rounded before their final normalisation, so the
// result differs from the CPU kernel's (which normalises, then rounds) within f16 rounding of the
// probabilities, not bit for bit; the plain kernel (attention.cu) keeps the CPU's numerics and is
// what the CPU execution layer runs (it has no tensor cores: paged_attention_mma returns
// cudaErrorNotSupported there, and attention_mma_supported() is false). head_dim a multiple of
// 16 up to 128. Dynamic shared memory: about 104 KB at head_dim 128 (the kernel opts in once).
// Stateless.
#include <cuda_runtime.h>

#include "kernels/cuda/half_math.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.h"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#include <mma.h>
#endif

namespace prima::cuda {

namespace {

constexpr int kRows = kAttentionMmaTileRows;  // query rows per block: 4 warps x 16
constexpr int kCols = 64;                     // context positions per step
constexpr int kWarps = kRows / 16;
constexpr int kMaxD = 128;

#if defined(__CUDACC__)
namespace wmma = nvcuda::wmma;

// Bytes of the dynamic shared memory for head_dim D: Q, K, V (f16), S (float), P (f16), O (float),
// then m, l, alpha (float per row).
std::size_t smem_bytes(int D) {
  return std::size_t(kRows * D * 2 + 2 * kCols * D * 2 + kRows * kCols * 4 + kRows * kCols * 2 +
                     kRows * D * 4 + 3 * kRows * 4);
}


__global__ void attention_mma_kernel(kernels::KvLayer kv, const float* q, int n_heads, float scale,
                                     const int* tables, const int* table_offset, const int* ctx_len,
                                     const int* tiles, float* out) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 700
  extern __shared__ __align__(32) unsigned char smem[];
  const int D = kv.head_dim;
  __half* sq = reinterpret_cast<__half*>(smem);
  __half* sk = sq + kRows * D;
  __half* sv = sk + kCols * D;
  float* ss = reinterpret_cast<float*>(sv + kCols * D);
  __half* sp = reinterpret_cast<__half*>(ss + kRows * kCols);
  float* so = reinterpret_cast<float*>(sp + kRows * kCols);
  float* sm = so + kRows * D;
  float* sl = sm + kRows;
  float* salpha = sl + kRows;

  const int h = int(blockIdx.x), t = int(threadIdx.x), warp = t / 32;
  const int r0 = tiles[2 * blockIdx.y], nr = tiles[2 * blockIdx.y + 1];
  const int kvh = h / (n_heads / kv.kv_heads);
  const int* table = tables + table_offset[r0];
  const std::int64_t head_stride = std::int64_t(kv.block_size) * D;
  const std::int64_t block_stride = head_stride * kv.kv_heads;

  for (int e = t; e < kRows * D; e += blockDim.x) {
    const int i = e / D;
    const float x = i < nr ? q[(std::int64_t(r0 + i) * n_heads + h) * D + e % D] : 0.0f;
    sq[e] = __ushort_as_half(float_to_half(x));
    so[e] = 0.0f;
  }
  int len_max = 0;
  for (int i = 0; i < nr; ++i) len_max = ctx_len[r0 + i] > len_max ? ctx_len[r0 + i] : len_max;
  if (t < kRows) {
    sm[t] = -INFINITY;
    sl[t] = 0.0f;
  }
  __syncthreads();

  for (int p0 = 0; p0 < len_max; p0 += kCols) {
    // K and V of positions p0 .. p0 + kCols, 8 halves (16 bytes) at a time.
    const int vecs = D / 8;
    for (int e = t; e < kCols * vecs; e += blockDim.x) {
      const int j = e / vecs, c = (e % vecs) * 8, p = p0 + j;
      uint4 kx = make_uint4(0, 0, 0, 0), vx = kx;
      if (p < len_max) {
        const std::int64_t off = std::int64_t(table[p / kv.block_size]) * block_stride +
                                 kvh * head_stride + std::int64_t(p % kv.block_size) * D + c;
        kx = *reinterpret_cast<const uint4*>(kv.k + off);
        vx = *reinterpret_cast<const uint4*>(kv.v + off);
      }
      *reinterpret_cast<uint4*>(sk + j * D + c) = kx;
      *reinterpret_cast<uint4*>(sv + j * D + c) = vx;
    }
    __syncthreads();
    // S = Q K^T: this warp's 16 rows against the kCols positions.
    for (int j = 0; j < kCols / 16; ++j) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
      for (int kk = 0; kk < D / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::col_major> b;
        wmma::load_matrix_sync(a, sq + warp * 16 * D + kk * 16, D);
        wmma::load_matrix_sync(b, sk + j * 16 * D + kk * 16, D);
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(ss + warp * 16 * kCols + j * 16, acc, kCols, wmma::mem_row_major);
    }
    __syncthreads();
    // The online softmax, a thread per row.
    if (t < kRows) {
      const int len = t < nr ? ctx_len[r0 + t] : 0;
      float* srow = ss + t * kCols;
      float m_new = sm[t];
      for (int j = 0; j < kCols; ++j) {
        srow[j] = p0 + j < len ? srow[j] * scale : -INFINITY;
        m_new = fmaxf(m_new, srow[j]);
      }
      const float alpha = m_new == -INFINITY ? 1.0f : expf(sm[t] - m_new);
      float sum = 0.0f;
      for (int j = 0; j < kCols; ++j) {
        const float p = srow[j] == -INFINITY ? 0.0f : expf(srow[j] - m_new);
        sum += p;
        sp[t * kCols + j] = __float2half_rn(p);
      }
      sl[t] = sl[t] * alpha + sum;
      sm[t] = m_new;
      salpha[t] = alpha;
    }
    __syncthreads();
    for (int e = t; e < kRows * D; e += blockDim.x) so[e] *= salpha[e / D];
    __syncthreads();
    // O += P V: this warp's 16 rows, head_dim / 16 column fragments.
    for (int f = 0; f < D / 16; ++f) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::load_matrix_sync(acc, so + warp * 16 * D + f * 16, D, wmma::mem_row_major);
      for (int kk = 0; kk < kCols / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, __half, wmma::row_major> a;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, __half, wmma::row_major> b;
        wmma::load_matrix_sync(a, sp + warp * 16 * kCols + kk * 16, kCols);
        wmma::load_matrix_sync(b, sv + kk * 16 * D + f * 16, D);
        wmma::mma_sync(acc, a, b, acc);
      }
      wmma::store_matrix_sync(so + warp * 16 * D + f * 16, acc, D, wmma::mem_row_major);
    }
    __syncthreads();
  }
  for (int e = t; e < nr * D; e += blockDim.x) {
    const int i = e / D;
    out[(std::int64_t(r0 + i) * n_heads + h) * D + e % D] = so[e] / sl[i];
  }
#endif
}
#endif

}  // namespace

bool attention_mma_supported(int head_dim) {
#if defined(__CUDACC__)
  return head_dim > 0 && head_dim % 16 == 0 && head_dim <= kMaxD;
#else
  (void)head_dim;
  return false;  // the CPU execution layer has no tensor cores
#endif
}

cudaError_t paged_attention_mma(const kernels::KvLayer& kv, const float* q, int n_heads,
                                float scale, const int* tables, const int* table_offset,
                                const int* ctx_len, const int* tiles, int n_tiles, float* out,
                                cudaStream_t stream) {
  if (!attention_mma_supported(kv.head_dim)) return cudaErrorNotSupported;
  if (n_tiles <= 0 || n_tiles > 65535 || n_heads <= 0 || kv.kv_heads <= 0 ||
      n_heads % kv.kv_heads != 0)
    return cudaErrorInvalidValue;
#if defined(__CUDACC__)
  const std::size_t bytes = smem_bytes(kv.head_dim);
  static const cudaError_t opted = cudaFuncSetAttribute(
      attention_mma_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem_bytes(kMaxD)));
  if (opted != cudaSuccess) return opted;
  PRIMA_LAUNCH(attention_mma_kernel, dim3(unsigned(n_heads), unsigned(n_tiles)), kWarps * 32, bytes,
               stream, kv, q, n_heads, scale, tables, table_offset, ctx_len, tiles, out);
  return cudaGetLastError();
#else
  (void)q, (void)scale, (void)tables, (void)table_offset, (void)ctx_len, (void)tiles, (void)out,
      (void)stream;
  return cudaErrorNotSupported;
#endif
}

}  // namespace prima::cuda
