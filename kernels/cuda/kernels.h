// The CUDA kernels' host-side entry points (prima_cuda): each launches one kernel on
// `stream` over device pointers and returns the launch's error (cudaSuccess when it was
// queued; errors of the kernel itself show at the next synchronisation). Shapes are the CPU
// kernels' (kernels/cpu/matmul.h, ops.h), and so are the numerics up to float reduction order
// and the device's cosf/sinf (tests/gpu holds each to its CPU kernel). Stateless; callable
// from any thread with its own stream.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/quant.h"

namespace prima::cuda {

// y[r] = sum_c W[r][c] * x[c] for r < rows: the decode-time linear layer on one token, W in
// the GGUF layout (each row row_bytes(type, cols) bytes) of type Q4_0, Q4_1 or Q8_0, x and y
// float. cols is a multiple of 32. cudaErrorInvalidValue for another type.
cudaError_t gemv_quant(kernels::DType type, const void* w, const float* x, float* y,
                       std::int64_t rows, std::int64_t cols, cudaStream_t stream);

// The activation type kernels/cpu's matmul quantizes x to for a weight type: Q8_1 for Q4_1,
// Q8_0 for Q4_0 and Q8_0.
kernels::DType activation_type(kernels::DType weight_type);

// y = rows x cols floats quantized to `type` (Q8_0 or Q8_1) blocks, kernels/cpu's bit for bit.
cudaError_t quantize_q8(kernels::DType type, const float* x, void* y, std::int64_t rows,
                        std::int64_t cols, cudaStream_t stream);

// y = n floats rounded to `type` (F16 or BF16; nearest, ties to even), kernels/cpu's
// quantize_row bit for bit: the activations of a dense GEMM with F16 or BF16 weights.
cudaError_t to_half(kernels::DType type, const float* x, void* y, std::int64_t n,
                    cudaStream_t stream);

// y[t * rows + r] = W[r] . x[t] for t < tokens: W of type Q4_0, Q4_1 or Q8_0 (GGUF layout),
// xq the tokens' activations quantized to activation_type(type) by quantize_q8. cols is a
// multiple of 32, tokens at most 65,535.
cudaError_t matmul_q8(kernels::DType type, const void* w, const void* xq, float* y,
                      std::int64_t rows, std::int64_t cols, std::int64_t tokens,
                      cudaStream_t stream);

// out[t * cols + c] = the embedding table's row ids[t], dequantized (F32, F16, BF16, Q4_0,
// Q4_1, Q8_0; rows of row_bytes), as kernels/cpu's dequantize_row.
cudaError_t embed(kernels::DType type, const void* table, std::int64_t row_bytes, std::int64_t cols,
                  const int* ids, std::int64_t tokens, float* out, cudaStream_t stream);

// RoPE in place on `tokens` rows `stride` floats apart, row t at position pos[t] (device).
cudaError_t rope_tokens(float* x, std::int64_t tokens, std::int64_t stride, int n_heads,
                        int head_dim, int rot_dims, const std::int64_t* pos, float freq_base,
                        cudaStream_t stream);
// rope_tokens over the query rows q and the key rows k in one launch (k may be null with 0
// heads).
cudaError_t rope_qk_tokens(float* q, std::int64_t q_stride, int n_q_heads, float* k,
                           std::int64_t k_stride, int n_k_heads, std::int64_t tokens, int head_dim,
                           int rot_dims, const std::int64_t* pos, float freq_base,
                           cudaStream_t stream);

// Stores `tokens` rows of K and V (each kv_heads x head_dim floats) as f16 in the paged cache
// `kv` (device pointers, kernels::KvLayer's layout) at slots[t] = physical block * block_size
// + offset in the block.
cudaError_t write_kv(const kernels::KvLayer& kv, const float* k, const float* v,
                     std::int64_t tokens, const int* slots, cudaStream_t stream);

// The most query rows of one attention tile (paged_attention's tiles).
constexpr int kAttentionTileRows = 16;

// Causal grouped-query attention of `tokens` query rows (n_heads x head_dim each) over the
// paged cache: row t attends to positions [0, ctx_len[t]) of its sequence, whose block table
// starts at tables + table_offset[t]; query head h reads KV head h / (n_heads / kv_heads). The
// rows come in n_tiles tiles (tiles[2i]: the first row, tiles[2i + 1]: 1 to kAttentionTileRows
// rows, all of one sequence), each tile's queries sharing every K/V tile read (FlashAttention's
// tiling; no score matrix in memory). head_dim <= 256, n_tiles <= 65,535. Device pointers.
cudaError_t paged_attention(const kernels::KvLayer& kv, const float* q, int n_heads, float scale,
                            std::int64_t tokens, const int* tables, const int* table_offset,
                            const int* ctx_len, const int* tiles, int n_tiles, float* out,
                            cudaStream_t stream);

// The most query rows of one tile of paged_attention_mma.
constexpr int kAttentionMmaTileRows = 64;

// Whether paged_attention_mma runs for this head_dim in this build (a multiple of 16 up to 128,
// on a device; never on the CPU execution layer, which has no tensor cores).
bool attention_mma_supported(int head_dim);
// paged_attention on tensor cores for prefill (attention_mma.cu): tiles of up to
// kAttentionMmaTileRows rows of one sequence, FlashAttention-2's online softmax (the probabilities
// rounded to f16 before their final normalisation: within f16 rounding of paged_attention's
// result, not its bits). cudaErrorNotSupported where attention_mma_supported is false.
cudaError_t paged_attention_mma(const kernels::KvLayer& kv, const float* q, int n_heads,
                                float scale, const int* tables, const int* table_offset,
                                const int* ctx_len, const int* tiles, int n_tiles, float* out,
                                cudaStream_t stream);

// out = RMSNorm(x) * w over `rows` rows of n (out may alias x).
cudaError_t rms_norm(const float* x, const float* w, std::int64_t rows, std::int64_t n, float eps,
                     float* out, cudaStream_t stream);
// x += residual, then out = RMSNorm(x) * w (the residual add fused into the norm: one launch,
// the same float operations as add_inplace then rms_norm).
cudaError_t add_rms_norm(float* x, const float* residual, const float* w, std::int64_t rows,
                         std::int64_t n, float eps, float* out, cudaStream_t stream);

// RoPE in place on one token's n_heads x head_dim values (kernels::rope's layout and pairs).
cudaError_t rope(float* x, int n_heads, int head_dim, int rot_dims, std::int64_t pos,
                 float freq_base, cudaStream_t stream);

// out[i] = silu(gate[i]) * up[i] (out may alias gate).
cudaError_t swiglu(const float* gate, const float* up, std::int64_t n, float* out,
                   cudaStream_t stream);

// y[i] += x[i].
cudaError_t add_inplace(float* y, const float* x, std::int64_t n, cudaStream_t stream);

// full (tokens x parts * cols) = the parts' slices as an all-gather lays them out (gathered:
// parts x tokens x cols, part-major), each token's row of part p at columns [p * cols,
// (p + 1) * cols): a tensor-parallel stage's slices in the layout its next product reads.
cudaError_t interleave_columns(const float* gathered, std::int64_t tokens, std::int64_t cols,
                               int parts, float* full, cudaStream_t stream);

// *amax (device) = the largest magnitude of x[0..n) (F32, F16 or BF16 values) as a float's
// bits; the call zeroes it first.
cudaError_t fp8_amax(kernels::DType type, const void* x, std::int64_t n, unsigned* amax,
                     cudaStream_t stream);
// y[i] = the FP8 E4M3 code of x[i] / scale, scale = fp8_e4m3_scale(amax) (fp8_e4m3.h; amax
// from fp8_amax), which is also stored at *scale when scale is not null (device pointers).
cudaError_t to_fp8(kernels::DType type, const void* x, std::int64_t n, const unsigned* amax,
                   std::uint8_t* y, float* scale, cudaStream_t stream);

// INT8 W8A8: y (rows x cols int8) = each row of x (F32, F16 or BF16) as symmetric INT8 codes
// rint(x / scale[row]) clamped to +-127, scale[row] = the row's largest magnitude / 127 (0 for
// a row of zeros, whose codes are 0): weights per output channel at load, activations per token
// each step.
cudaError_t quantize_i8_rows(kernels::DType type, const void* x, std::int64_t rows,
                             std::int64_t cols, std::int8_t* y, float* scale, cudaStream_t stream);
// y[i][j] = acc[i][j] * (x_scale[i] * w_scale[j]) for the m x n INT32 products of an INT8 GEMM.
cudaError_t dequant_i32(const std::int32_t* acc, const float* x_scale, const float* w_scale,
                        std::int64_t m, std::int64_t n, float* y, cudaStream_t stream);

// Rows [row0, row0 + rows) of tensor `tensor` of a synthetic model of seed `seed`
// (synthetic_math.h: uniform in mean +- half_width), cols each, written at dst in `type`'s GGUF
// layout (F32, F16, BF16, Q4_0, Q4_1, Q8_0; cols a multiple of 32 for the block types): the
// bytes backends/real/synthetic_model.cpp writes into the model's file for those rows.
cudaError_t synthetic_rows(kernels::DType type, std::uint64_t seed, std::uint64_t tensor,
                           std::int64_t row0, std::int64_t rows, std::int64_t cols,
                           float half_width, float mean, void* dst, cudaStream_t stream);

// W4A16: 4-bit weights with an f16 scale d and minimum m per group of `group` elements of a row
// (w = q * d + m, q in 0..15; GPTQ/AWQ-style asymmetric groups), 16-bit activations.
// w4_group_size: the group a row of `cols` takes, 128, 64 or 32 (the largest dividing it; 0: none).
int w4_group_size(std::int64_t cols);
// q (rows x cols / 2 bytes: element 2b in the low nibble of byte b of its row) and dm (d, m as f16
// bits per group, row-major) of x (rows x cols F16 or BF16 values): d = (max - min) / 15 and
// m = min of the group rounded to f16, codes rint((x - m) / d) with the rounded d and m,
// clamped to 0..15 (all 0 where d is 0).
cudaError_t quantize_w4_rows(kernels::DType type, const void* x, std::int64_t rows,
                             std::int64_t cols, int group, std::uint8_t* q, std::uint16_t* dm,
                             cudaStream_t stream);
// y[t * rows + r] = sum_c x[t][c] * (q[r][c] * d + m) for t < tokens: x in `type` (F16 or BF16,
// tokens x cols), float sums; tokens at most 524,280.
cudaError_t gemm_w4a16(kernels::DType type, const void* x, const std::uint8_t* q,
                       const std::uint16_t* dm, int group, std::int64_t rows, std::int64_t cols,
                       std::int64_t tokens, float* y, cudaStream_t stream);

}  // namespace prima::cuda
