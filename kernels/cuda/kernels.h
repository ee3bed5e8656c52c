// The CUDA kernels' host-side entry points (prima_cuda): each launches one kernel on
// `stream` over device pointers and returns the launch's error (cudaSuccess when it was
// queued; errors of the kernel itself show at the next synchronisation). Shapes are the CPU
// kernels' (kernels/cpu/matmul.h, ops.h), and so are the numerics up to float reduction order
// and the device's cosf/sinf (tests/gpu holds each to its CPU kernel). Stateless; callable
// from any thread with its own stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cpu/quant.h"

namespace prima::cuda {

// y[r] = sum_c W[r][c] * x[c] for r < rows: the decode-time linear layer on one token, W in
// the GGUF layout (each row row_bytes(type, cols) bytes) of type Q4_0, Q4_1 or Q8_0, x and y
// float. cols is a multiple of 32. cudaErrorInvalidValue for another type.
cudaError_t gemv_quant(kernels::DType type, const void* w, const float* x, float* y,
                       std::int64_t rows, std::int64_t cols, cudaStream_t stream);

// out = RMSNorm(x) * w over `rows` rows of n (out may alias x).
cudaError_t rms_norm(const float* x, const float* w, std::int64_t rows, std::int64_t n, float eps,
                     float* out, cudaStream_t stream);

// RoPE in place on one token's n_heads x head_dim values (kernels::rope's layout and pairs).
cudaError_t rope(float* x, int n_heads, int head_dim, int rot_dims, std::int64_t pos,
                 float freq_base, cudaStream_t stream);

// out[i] = silu(gate[i]) * up[i] (out may alias gate).
cudaError_t swiglu(const float* gate, const float* up, std::int64_t n, float* out,
                   cudaStream_t stream);

// y[i] += x[i].
cudaError_t add_inplace(float* y, const float* x, std::int64_t n, cudaStream_t stream);

// *index = the index of the largest of x[0..n) (the lowest on ties, NaN never chosen unless
// all are NaN: then 0), as the CPU sampler's argmax. One block; n up to 2^31 - 1.
cudaError_t argmax(const float* x, std::int64_t n, int* index, cudaStream_t stream);

}  // namespace prima::cuda
