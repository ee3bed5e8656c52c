// argmax over one row, or over several rows of a matrix with a block each (kernels.h): a block
// of 1024 threads; each thread keeps the best
// (value, index) of its strided share, and the block reduces them in shared memory. "Best" is
// the larger value, or the lower index on equal values, so ties go to the lowest index as in
// the CPU sampler; NaN never compares larger. Stateless.
#include <cuda_runtime.h>

#include "kernels/cuda/kernels.h"
#include "kernels/cuda/launch.h"

namespace prima::cuda {

namespace {

constexpr int kThreads = 1024;

__device__ bool better(float v, std::int64_t i, float best_v, std::int64_t best_i) {
  return v > best_v || (v == best_v && i < best_i);
}

// Block b: the row x + rows[b] * n (row 0 when rows is null) into index[b].
__global__ void argmax_kernel(const float* x, std::int64_t n, const int* rows, int* index) {
  x += (rows ? std::int64_t(rows[blockIdx.x]) : std::int64_t(0)) * n;
  index += blockIdx.x;
  __shared__ float vals[kThreads];
  __shared__ std::int64_t idxs[kThreads];
  float bv = -INFINITY;
  std::int64_t bi = n;  // none yet
  for (std::int64_t i = threadIdx.x; i < n; i += kThreads)
    if (better(x[i], i, bv, bi)) bv = x[i], bi = i;
  vals[threadIdx.x] = bv;
  idxs[threadIdx.x] = bi;
  __syncthreads();
  for (int half = kThreads / 2; half > 0; half /= 2) {
    const int t = threadIdx.x;
    if (t < half && better(vals[t + half], idxs[t + half], vals[t], idxs[t])) {
      vals[t] = vals[t + half];
      idxs[t] = idxs[t + half];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) *index = idxs[0] < n ? int(idxs[0]) : 0;
}

}  // namespace

cudaError_t argmax(const float* x, std::int64_t n, int* index, cudaStream_t stream) {
  if (n <= 0 || n > 0x7fffffff) return cudaErrorInvalidValue;
  PRIMA_LAUNCH(argmax_kernel, 1, kThreads, 0, stream, x, n, nullptr, index);
  return cudaGetLastError();
}

cudaError_t argmax_rows(const float* x, std::int64_t n, const int* rows, int count, int* index,
                        cudaStream_t stream) {
  if (n <= 0 || n > 0x7fffffff || count <= 0) return cudaErrorInvalidValue;
  PRIMA_LAUNCH(argmax_kernel, unsigned(count), kThreads, 0, stream, x, n, rows, index);
  return cudaGetLastError();
}

}  // namespace prima::cuda
