// The row and element-wise operators of kernels.h: RMSNorm (one block per row), RoPE (one
// thread per rotated pair), SwiGLU and the residual add (grid-stride loops). The math is
// ops_math.h's, shared with the host. Stateless.
#include <cuda_runtime.h>

#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/ops_math.h"

namespace prima::cuda {

namespace {

constexpr int kThreads = 256;

unsigned grid_for(std::int64_t n) {
  const std::int64_t g = (n + kThreads - 1) / kThreads;
  return unsigned(g < 4096 ? (g > 0 ? g : 1) : 4096);
}

// Float squares summed in double per thread, then across the block (the CPU sums them in
// double in element order). With `residual`, x += residual first (add_rms_norm: the residual
// add fused in; each thread reads back only the elements it wrote).
__global__ void rms_norm_kernel(float* x, const float* residual, const float* w, std::int64_t n,
                                float eps, float* out) {
  __shared__ double partial[kThreads];
  float* xr = x + std::int64_t(blockIdx.x) * n;
  float* outr = out + std::int64_t(blockIdx.x) * n;
  if (residual) {
    const float* rr = residual + std::int64_t(blockIdx.x) * n;
    for (std::int64_t i = threadIdx.x; i < n; i += kThreads) xr[i] += rr[i];
  }
  double s = 0.0;
  for (std::int64_t i = threadIdx.x; i < n; i += kThreads) s += double(xr[i] * xr[i]);
  partial[threadIdx.x] = s;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  const float scale = rms_scale(partial[0], n, eps);
  for (std::int64_t i = threadIdx.x; i < n; i += kThreads) outr[i] = rms_apply(xr[i], scale, w[i]);
}

__global__ void rope_kernel(float* x, int n_heads, int head_dim, int rot_dims, std::int64_t pos,
                            float theta_scale) {
  const int pairs = rot_dims / 2;
  const std::int64_t t = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= std::int64_t(n_heads) * pairs) return;
  const int head = int(t / pairs), pair = int(t % pairs);
  const float theta = rope_theta(pos, pair, theta_scale);
  float* v = x + std::int64_t(head) * head_dim + 2 * pair;
  rope_rotate_pair(v, v + 1, cosf(theta), sinf(theta));
}

// rope_kernel for token blockIdx.y at position pos[blockIdx.y] over the n_q heads of q (rows
// q_stride floats apart) and then the n_k heads of k (k_stride apart): Q and K in one launch.
__global__ void rope_tokens_kernel(float* q, std::int64_t q_stride, int n_q, float* k,
                                   std::int64_t k_stride, int n_k, int head_dim, int rot_dims,
                                   const std::int64_t* pos, float theta_scale) {
  const int pairs = rot_dims / 2;
  std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= std::int64_t(n_q + n_k) * pairs) return;
  float* row = q + std::int64_t(blockIdx.y) * q_stride;
  if (i >= std::int64_t(n_q) * pairs) {
    i -= std::int64_t(n_q) * pairs;
    row = k + std::int64_t(blockIdx.y) * k_stride;
  }
  const int head = int(i / pairs), pair = int(i % pairs);
  const float theta = rope_theta(pos[blockIdx.y], pair, theta_scale);
  float* v = row + std::int64_t(head) * head_dim + 2 * pair;
  rope_rotate_pair(v, v + 1, cosf(theta), sinf(theta));
}

__global__ void swiglu_kernel(const float* gate, const float* up, std::int64_t n, float* out) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    out[i] = swiglu(gate[i], up[i]);
}

__global__ void add_kernel(float* y, const float* x, std::int64_t n) {
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] += x[i];
}

// full[t][p * cols + c] = gathered[p][t][c], one thread per element of full.
__global__ void interleave_columns_kernel(const float* gathered, std::int64_t tokens,
                                          std::int64_t cols, int parts, float* full) {
  const std::int64_t width = cols * parts;
  for (std::int64_t i = std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < tokens * width;
       i += std::int64_t(gridDim.x) * blockDim.x) {
    const std::int64_t t = i / width, p = i % width / cols, c = i % cols;
    full[i] = gathered[(p * tokens + t) * cols + c];
  }
}

}  // namespace

cudaError_t rms_norm(const float* x, const float* w, std::int64_t rows, std::int64_t n, float eps,
                     float* out, cudaStream_t stream) {
  if (rows <= 0 || n <= 0) return cudaErrorInvalidValue;
  PRIMA_LAUNCH(rms_norm_kernel, unsigned(rows), kThreads, 0, stream, const_cast<float*>(x), nullptr,
               w, n, eps, out);
  return cudaGetLastError();
}

cudaError_t add_rms_norm(float* x, const float* residual, const float* w, std::int64_t rows,
                         std::int64_t n, float eps, float* out, cudaStream_t stream) {
  if (rows <= 0 || n <= 0 || !residual) return cudaErrorInvalidValue;
  PRIMA_LAUNCH(rms_norm_kernel, unsigned(rows), kThreads, 0, stream, x, residual, w, n, eps, out);
  return cudaGetLastError();
}

cudaError_t rope(float* x, int n_heads, int head_dim, int rot_dims, std::int64_t pos,
                 float freq_base, cudaStream_t stream) {
  if (n_heads <= 0 || rot_dims < 2 || rot_dims > head_dim) return cudaErrorInvalidValue;
  const std::int64_t pairs = std::int64_t(n_heads) * (rot_dims / 2);
  PRIMA_LAUNCH(rope_kernel, unsigned((pairs + kThreads - 1) / kThreads), kThreads, 0, stream, x,
               n_heads, head_dim, rot_dims, pos, rope_theta_scale(freq_base, rot_dims));
  return cudaGetLastError();
}

cudaError_t rope_tokens(float* x, std::int64_t tokens, std::int64_t stride, int n_heads,
                        int head_dim, int rot_dims, const std::int64_t* pos, float freq_base,
                        cudaStream_t stream) {
  return rope_qk_tokens(x, stride, n_heads, nullptr, 0, 0, tokens, head_dim, rot_dims, pos,
                        freq_base, stream);
}

cudaError_t rope_qk_tokens(float* q, std::int64_t q_stride, int n_q_heads, float* k,
                           std::int64_t k_stride, int n_k_heads, std::int64_t tokens, int head_dim,
                           int rot_dims, const std::int64_t* pos, float freq_base,
                           cudaStream_t stream) {
  if (tokens <= 0 || tokens > 65535 || n_q_heads <= 0 || n_k_heads < 0 || (n_k_heads && !k) ||
      rot_dims < 2 || rot_dims > head_dim)
    return cudaErrorInvalidValue;
  const std::int64_t pairs = std::int64_t(n_q_heads + n_k_heads) * (rot_dims / 2);
  PRIMA_LAUNCH(rope_tokens_kernel,
               dim3(unsigned((pairs + kThreads - 1) / kThreads), unsigned(tokens)), kThreads, 0,
               stream, q, q_stride, n_q_heads, k, k_stride, n_k_heads, head_dim, rot_dims, pos,
               rope_theta_scale(freq_base, rot_dims));
  return cudaGetLastError();
}

cudaError_t swiglu(const float* gate, const float* up, std::int64_t n, float* out,
                   cudaStream_t stream) {
  if (n <= 0) return cudaErrorInvalidValue;
  PRIMA_LAUNCH(swiglu_kernel, grid_for(n), kThreads, 0, stream, gate, up, n, out);
  return cudaGetLastError();
}

cudaError_t add_inplace(float* y, const float* x, std::int64_t n, cudaStream_t stream) {
  if (n <= 0) return cudaErrorInvalidValue;
  PRIMA_LAUNCH(add_kernel, grid_for(n), kThreads, 0, stream, y, x, n);
  return cudaGetLastError();
}

cudaError_t interleave_columns(const float* gathered, std::int64_t tokens, std::int64_t cols,
                               int parts, float* full, cudaStream_t stream) {
  if (tokens <= 0 || cols <= 0 || parts <= 0) return cudaErrorInvalidValue;
  PRIMA_LAUNCH(interleave_columns_kernel, grid_for(tokens * cols * parts), kThreads, 0, stream,
               gathered, tokens, cols, parts, full);
  return cudaGetLastError();
}

}  // namespace prima::cuda
