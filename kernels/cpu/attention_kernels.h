// Internal to kernels/cpu: the inner loops of attention over one KV block, per ISA (portable
// and AVX2/F16C), exposed so tests can hold them to each other. Stateless; thread-safe.
#pragma once

#include <cstdint>

namespace prima::kernels::detail {

struct AttentionKernels {
  const char* isa;
  // scores[i] = scale * dot(q, k + i * stride) for i < count; q is head_dim floats (already
  // rounded to f16 values), k rows are head_dim f16 values.
  void (*kq)(const float* q, const std::uint16_t* k, std::int64_t stride, int count, int head_dim,
             float scale, float* scores);
  // out[j] += sum_i p[i] * v[i * stride + j] for j < head_dim.
  void (*pv)(const float* p, const std::uint16_t* v, std::int64_t stride, int count, int head_dim,
             float* out);
};

const AttentionKernels& attention_portable_kernels();
// Only valid on a CPU with AVX2, FMA and F16C.
const AttentionKernels& attention_avx2_kernels();

}  // namespace prima::kernels::detail
