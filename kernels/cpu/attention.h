// Attention over the engine's paged KV cache (PagedAttention layout), grouped-query.
//
// One layer's cache: K and V, each num_blocks x kv_heads x block_size x head_dim, stored as
// f16 (as llama.cpp's default KV cache), indexed by the engine's physical block ids: token
// position p of a sequence lives in block block_table[p / block_size], slot p % block_size.
// Within a block each KV head's rows are contiguous (block_size x head_dim), so a decode
// step reading one KV head over a context streams whole runs of memory.
//
// attention() handles one sequence's chunk of n tokens at positions [pos0, pos0 + n): token
// i attends causally to positions [0, pos0 + i]. The chunk's own K/V must already be written
// (write_kv). Query head h reads KV head h / (n_heads / kv_heads). Numerics as llama.cpp
// without flash attention: q rounded to f16 for K.q, scores scaled, softmax in f32, the
// probabilities rounded to f16 for the V product.
#pragma once

#include <cstdint>

#include "kernels/cpu/thread_pool.h"

namespace prima::kernels {

struct KvLayer {
  std::uint16_t* k = nullptr;  // f16
  std::uint16_t* v = nullptr;  // f16
  int block_size = 16;
  int kv_heads = 1;
  int head_dim = 64;
  // K or V values of one token, all KV heads (the row width of write_kv's inputs).
  std::int64_t token_stride() const { return std::int64_t(kv_heads) * head_dim; }
  std::int64_t block_stride() const { return token_stride() * block_size; }
  // Where KV head `head`'s head_dim values of slot `slot` of physical block `block` start.
  std::int64_t at(std::int64_t block, std::int64_t slot, int head) const {
    return block * block_stride() + (std::int64_t(head) * block_size + slot) * head_dim;
  }
};

// Stores n tokens' K and V (n x kv_heads*head_dim floats each) at positions [pos0, pos0+n).
void write_kv(const KvLayer& kv, const int* block_table, std::int64_t pos0, std::int64_t n,
              const float* k, const float* v);

// q: n x n_heads*head_dim; out: n x n_heads*head_dim. scale = 1/sqrt(head_dim) typically.
void attention(const KvLayer& kv, const int* block_table, std::int64_t pos0, std::int64_t n,
               const float* q, int n_heads, float scale, float* out, ThreadPool& pool);

// Reference (dequantized f16, double accumulation, no parallelism); for tests.
// One sequence of a batched attention call: n query rows at positions [pos0, pos0 + n), their
// K/V already written; q and out as in attention().
struct AttentionSeq {
  const int* block_table = nullptr;
  std::int64_t pos0 = 0;
  std::int64_t n = 0;
  const float* q = nullptr;
  float* out = nullptr;
};

// attention() for several sequences in one pass over the pool (their (row, head) items split
// over the threads together); each sequence's result is the one attention() gives it alone.
void attention_batch(const KvLayer& kv, const AttentionSeq* seqs, int count, int n_heads,
                     float scale, ThreadPool& pool);

void attention_reference(const KvLayer& kv, const int* block_table, std::int64_t pos0,
                         std::int64_t n, const float* q, int n_heads, float scale, float* out);

}  // namespace prima::kernels
