// LlamaForward: the Llama forward pass of one rank over a mixed batch as the engine forms it
// (several sequences, each a prefill chunk of n tokens at positions [pos0, pos0 + n) or one
// decode token), in llama.cpp's order of operations:
//   x = token_embd[ids]
//   per layer: h = rms_norm(x) * attn_norm; q, k, v = h Wq^T, h Wk^T, h Wv^T (all tokens at
//   once); RoPE on q and k at each token's position; K/V written into the paged cache at the
//   sequence's block table; causal attention per sequence; x += attn Wo^T;
//   h = rms_norm(x) * ffn_norm; x += (silu(h Wg^T) * h Wu^T) Wd^T
//   final: rms_norm * output_norm, LM head, only for the rows that sample.
// Tensor parallelism: each rank computes its output rows of every matrix (its heads, its FFN
// columns, its hidden rows of Wo and Wd) and the stage gathers the slices it needs whole (the
// attention output, the SwiGLU output, the Wo and Wd outputs) with an all-reduce of
// zero-padded buffers, which is exact: every value is computed as in a single process.
// With pipeline parallelism each stage runs its own layers (layers()), the first embeds and
// the last computes logits. Owned and called by one worker thread (not thread-safe: it holds
// scratch buffers); the kernels run on the given ThreadPool.
#pragma once

#include <functional>
#include <vector>

#include "backends/real/kv_store.h"
#include "backends/real/llama_weights.h"
#include "backends/real/step_codec.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/thread_pool.h"

namespace prima::real {

// Checks a step's token ids, positions and block tables against the model and a paged cache
// of num_blocks blocks of block_size (errors name the step, the request and what is wrong).
Status check_step(const LlamaConfig& c, int block_size, int num_blocks, const StepInput& s);

class LlamaForward {
 public:
  // In-place sum over the tensor-parallel group (null when tp == 1); used to gather.
  using AllReduce = std::function<Status(float*, std::size_t)>;
  LlamaForward(const LlamaWeights* w, KvStore* kv, kernels::ThreadPool* pool,
               AllReduce allreduce = nullptr);

  // Checks token ids, block tables and positions against the model and the cache.
  Status check(const StepInput& s) const;
  // x (T x hidden, T = s.total_tokens()) = embeddings of the step's tokens.
  void embed(const StepInput& s, std::vector<float>* x) const;
  // Runs this shard's layers on x in place (writes the K/V of the step's tokens).
  Status layers(const StepInput& s, float* x);
  // Logits (logit_rows().size() x vocab) at the step's logit rows: each scoring sequence's
  // scored positions and each sampling sequence's last token (StepInput::logit_rows).
  void logits(const StepInput& s, const float* x, std::vector<float>* out);
  // Logits (n x vocab) at the given token rows of x.
  void logits_at(const std::int64_t* rows, std::size_t n, const float* x, std::vector<float>* out);
  // check + embed + layers + logits (a single-stage shard).
  Status forward(const StepInput& s, std::vector<float>* logits);

 private:
  const LlamaWeights* w_;
  KvStore* kv_;
  kernels::ThreadPool* pool_;
  AllReduce allreduce_;
  // Gathers a T x (tp * cols) matrix from each rank's T x cols slice `local` into `full`.
  Status gather(const float* local, std::int64_t T, std::int64_t cols, std::vector<float>* full);

  std::vector<float> h_, q_, k_, v_, att_, o_, g_, u_, rows_, full_att_, full_g_, part_;
  std::vector<kernels::AttentionSeq> attn_seqs_;
  // Per token row of the step: its sequence (index into the step's seqs) and position.
  std::vector<int> tok_seq_;
  std::vector<std::int64_t> tok_pos_;
};

}  // namespace prima::real
