// Internal to kernels/cpu: the inner loops of attention over one KV block, per ISA (portable
// and AVX2/F16C), exposed so tests can hold them to each other. Stateless; thread-safe.
#pragma once

#include <cstdint>

namespace prima::kernels::detail {

// llama.cpp (no flash attention) multiplies K.q and P.V with one of two F16 dot-product
// orders: its F16 GEMM (llamafile's tinyBLAS, 16 lanes: lane l accumulates elements l, l + 16,
// ... with fma) when the step has two or more query rows, and ggml_vec_dot_f16 (AVX-512 form:
// 64 lanes, lane m accumulates elements m, m + 64, ... with fma; lanes m, m + 16, m + 32, m + 48
// folded as (a0 + a2) + (a1 + a3)) for a single row. Both end with reduce16 (ops_kernels.h).
enum class DotOrder { kGemm16, kVec64 };

struct AttentionKernels {
  const char* isa;
  // scores[i] = scale * dot(q, k + i * stride) for i < count; q is head_dim floats (already
  // rounded to f16 values), k rows are head_dim f16 values. Elements past the last full lane
  // group (head_dim % 16 or % 64) are added after: in float (kGemm16) or, as float products,
  // to the sum in double (kVec64).
  void (*kq)(const float* q, const std::uint16_t* k, std::int64_t stride, int count, int head_dim,
             float scale, DotOrder order, float* scores);
  // The V product in lanes by position: acc[m * head_dim + j] = fma(v[i * stride + j], p[i],
  // acc[...]) with m = (pos0 + i) % lanes (16 for kGemm16, 64 for kVec64), positions in order
  // within a lane. fold_lanes() turns the lanes into outputs.
  void (*pv)(const float* p, const std::uint16_t* v, std::int64_t stride, int count, int head_dim,
             std::int64_t pos0, int lanes, float* acc);
  // out[j] from the pv lanes (16 or 64 lanes of head_dim values each), in the dot order's sums.
  void (*fold)(const float* acc, int lanes, int head_dim, float* out);
  // x[i] = the f16 value nearest x[i] * scale (ties to even), for i < n: the query rows
  // (scale 1) and the softmax's normalisation (scale 1 / sum) with its rounding.
  void (*round_f16)(float* x, std::int64_t n, float scale);
  // out[i] = the f16 bits of the value nearest x[i] (ties to even), for i < n: the KV writes.
  // (The F16C conversion keeps a NaN's payload where the portable one gives 0x7e00.)
  void (*to_f16)(const float* x, std::uint16_t* out, std::int64_t n);
  // Optional (nullptr in the portable and AVX2 sets): one query row of each of `heads` heads
  // that share one KV head, over a whole context at once in either dot order (a decode row's
  // kVec64, a prefill row's kGemm16), positions given by row pointers (k_rows[i], v_rows[i]:
  // head_dim f16 values of position i), for head_dim a multiple of 64. kq_rows: q holds the
  // heads' rows one after another (heads x head_dim); scores[h * len + i] as kq gives head h's
  // score of position i. pv_rows: p holds the heads' probabilities (heads x len);
  // out[h * head_dim + j] as pv over every position then fold give head h's output j.
  void (*kq_rows)(const float* q, int heads, const std::uint16_t* const* k_rows, int len,
                  int head_dim, float scale, DotOrder order, float* scores) = nullptr;
  void (*pv_rows)(const float* p, int heads, const std::uint16_t* const* v_rows, int len,
                  int head_dim, DotOrder order, float* out) = nullptr;
};

// The portable fold (also used by the portable kq for its lanes).
void fold_lanes(const float* acc, int lanes, int head_dim, float* out);

const AttentionKernels& attention_portable_kernels();
// Only valid on a CPU with AVX2, FMA and F16C.
const AttentionKernels& attention_avx2_kernels();
// The AVX2 set plus kq_rows / pv_rows in 512-bit registers. Only valid on a CPU with AVX2,
// FMA, F16C and AVX-512 F/VL/DQ/BW.
const AttentionKernels& attention_avx512_kernels();
bool cpu_has_avx512_attention();

}  // namespace prima::kernels::detail
