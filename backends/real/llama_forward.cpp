// The Llama forward pass (see llama_forward.h). Worker thread only.
#include "backends/real/llama_forward.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/ops.h"

namespace prima::real {

LlamaForward::LlamaForward(const LlamaWeights* w, KvStore* kv, kernels::ThreadPool* pool,
                           AllReduce allreduce)
    : w_(w), kv_(kv), pool_(pool), allreduce_(std::move(allreduce)) {}

Status LlamaForward::check(const StepInput& s) const {
  return check_step(w_->config(), kv_->block_size(), kv_->num_blocks(), s);
}

Status check_step(const LlamaConfig& c, int block_size, int num_blocks, const StepInput& s) {
  for (std::size_t i = 0; i < s.seqs.size(); ++i) {
    const auto& q = s.seqs[i];
    const std::string where =
        "step " + std::to_string(s.step_id) + ", request " + std::to_string(q.request);
    if (q.tokens.empty()) return invalid_argument(where + ": no tokens");
    const std::int64_t end = q.pos0 + static_cast<std::int64_t>(q.tokens.size());
    if (q.pos0 < 0 || end > c.context_length)
      return invalid_argument(where + ": positions [" + std::to_string(q.pos0) + ", " +
                              std::to_string(end) + ") outside the context of " +
                              std::to_string(c.context_length));
    for (int t : q.tokens)
      if (t < 0 || t >= c.vocab)
        return invalid_argument(where + ": token id " + std::to_string(t) +
                                " outside the vocabulary of " + std::to_string(c.vocab));
    const std::int64_t need = (end + block_size - 1) / block_size;
    if (static_cast<std::int64_t>(q.blocks.size()) < need)
      return invalid_argument(where + ": block table of " + std::to_string(q.blocks.size()) +
                              " blocks cannot hold " + std::to_string(end) + " tokens");
    for (int b : q.blocks)
      if (b < 0 || b >= num_blocks)
        return invalid_argument(where + ": KV block " + std::to_string(b) + " outside the " +
                                std::to_string(num_blocks) + " blocks of the cache");
  }
  return ok_status();
}

void LlamaForward::embed(const StepInput& s, std::vector<float>* x) const {
  const int H = w_->config().hidden;
  x->resize(std::size_t(s.total_tokens()) * H);
  std::int64_t row = 0;
  for (const auto& q : s.seqs)
    for (int t : q.tokens) w_->embed(t, x->data() + (row++) * H);
}

Status LlamaForward::gather(const float* local, std::int64_t T, std::int64_t cols,
                            std::vector<float>* full) {
  const int tp = w_->shard().tp, r = w_->shard().tp_rank;
  const std::int64_t width = cols * tp;
  full->assign(std::size_t(T * width), 0.0f);
  for (std::int64_t t = 0; t < T; ++t)
    std::copy(local + t * cols, local + (t + 1) * cols, full->data() + t * width + r * cols);
  return allreduce_(full->data(), full->size());
}

Status LlamaForward::layers(const StepInput& s, float* x) {
  const auto& c = w_->config();
  const std::int64_t T = s.total_tokens();
  const int H = c.hidden, D = c.head_dim;
  const int nh = w_->local_heads(), nkv = w_->local_kv_heads(), nf = w_->local_ffn();
  const std::int64_t lq = std::int64_t(nh) * D, lkv = std::int64_t(nkv) * D;
  h_.resize(T * H);
  q_.resize(T * lq);
  k_.resize(T * lkv);
  v_.resize(T * lkv);
  att_.resize(T * lq);
  o_.resize(T * H);
  g_.resize(T * nf);
  u_.resize(T * nf);
  const float scale = 1.0f / std::sqrt(static_cast<float>(D));
  const std::int64_t grain = 1;

  // Each token's sequence and position, for RoPE and the KV writes; the attention calls.
  tok_seq_.resize(std::size_t(T));
  tok_pos_.resize(std::size_t(T));
  attn_seqs_.clear();
  {
    std::int64_t row = 0;
    for (std::size_t si = 0; si < s.seqs.size(); ++si) {
      const auto& sq = s.seqs[si];
      const std::int64_t n = static_cast<std::int64_t>(sq.tokens.size());
      for (std::int64_t i = 0; i < n; ++i) {
        tok_seq_[std::size_t(row + i)] = static_cast<int>(si);
        tok_pos_[std::size_t(row + i)] = sq.pos0 + i;
      }
      attn_seqs_.push_back(
          {sq.blocks.data(), sq.pos0, n, q_.data() + row * lq, att_.data() + row * lq});
      row += n;
    }
  }

  // The elementwise work runs per token on the pool too (with one thread, or one token, on the
  // calling thread): the residual adds are folded into the norm that follows them (o_ holds
  // the previous layer's FFN output from layer 1 on).
  for (int l = 0; l < w_->num_layers(); ++l) {
    const LayerWeights& L = w_->layer(l);
    const kernels::KvLayer kv = kv_->layer(l);
    const bool add_ffn = l > 0;
    pool_->parallel_for(
        T,
        [&](std::int64_t b, std::int64_t e, int) {
          for (std::int64_t t = b; t < e; ++t) {
            if (add_ffn) kernels::add_inplace(x + t * H, o_.data() + t * H, H);
            kernels::rms_norm(x + t * H, L.attn_norm, H, c.eps, h_.data() + t * H);
          }
        },
        grain);
    {  // Q, K and V from one conversion of h and one pool job
      const kernels::WeightView w[3] = {L.wq, L.wk, L.wv};
      float* const y[3] = {q_.data(), k_.data(), v_.data()};
      kernels::matmul_many(w, y, 3, h_.data(), T, *pool_);
    }
    pool_->parallel_for(
        T,
        [&](std::int64_t b, std::int64_t e, int) {
          for (std::int64_t t = b; t < e; ++t) {
            const std::int64_t pos = tok_pos_[std::size_t(t)];
            kernels::rope_qk(q_.data() + t * lq, nh, k_.data() + t * lkv, nkv, D, c.rot_dims, pos,
                             c.freq_base);
            kernels::write_kv(kv, s.seqs[std::size_t(tok_seq_[std::size_t(t)])].blocks.data(), pos,
                              1, k_.data() + t * lkv, v_.data() + t * lkv);
          }
        },
        grain);
    kernels::attention_batch(kv, attn_seqs_.data(), static_cast<int>(attn_seqs_.size()), nh, scale,
                             *pool_);
    if (allreduce_) {
      PRIMA_RETURN_IF_ERROR(gather(att_.data(), T, lq, &full_att_));
      part_.resize(std::size_t(T) * L.wo.rows);
      kernels::matmul(L.wo, full_att_.data(), T, part_.data(), *pool_);
      PRIMA_RETURN_IF_ERROR(gather(part_.data(), T, L.wo.rows, &o_));
    } else {
      kernels::matmul(L.wo, att_.data(), T, o_.data(), *pool_);
    }
    pool_->parallel_for(
        T,
        [&](std::int64_t b, std::int64_t e, int) {
          for (std::int64_t t = b; t < e; ++t) {
            kernels::add_inplace(x + t * H, o_.data() + t * H, H);
            kernels::rms_norm(x + t * H, L.ffn_norm, H, c.eps, h_.data() + t * H);
          }
        },
        grain);
    {  // gate and up: one conversion, one pool job
      const kernels::WeightView w[2] = {L.gate, L.up};
      float* const y[2] = {g_.data(), u_.data()};
      kernels::matmul_many(w, y, 2, h_.data(), T, *pool_);
    }
    pool_->parallel_for(
        T,
        [&](std::int64_t b, std::int64_t e, int) {
          kernels::silu_mul(g_.data() + b * nf, u_.data() + b * nf, (e - b) * nf,
                            g_.data() + b * nf, nf);
        },
        grain);
    if (allreduce_) {
      PRIMA_RETURN_IF_ERROR(gather(g_.data(), T, nf, &full_g_));
      part_.resize(std::size_t(T) * L.down.rows);
      kernels::matmul(L.down, full_g_.data(), T, part_.data(), *pool_);
      PRIMA_RETURN_IF_ERROR(gather(part_.data(), T, L.down.rows, &o_));
    } else {
      kernels::matmul(L.down, g_.data(), T, o_.data(), *pool_);
    }
  }
  // The last layer's FFN output (the others were added before the next layer's norm).
  if (w_->num_layers() > 0) kernels::add_inplace(x, o_.data(), T * H);
  return ok_status();
}

void LlamaForward::logits(const StepInput& s, const float* x, std::vector<float>* out) {
  const std::vector<std::int64_t> rows = s.logit_rows();
  logits_at(rows.data(), rows.size(), x, out);
}

void LlamaForward::logits_at(const std::int64_t* rows, std::size_t n, const float* x,
                             std::vector<float>* out) {
  const auto& c = w_->config();
  const int H = c.hidden;
  rows_.resize(n * H);
  for (std::size_t r = 0; r < n; ++r)
    kernels::rms_norm(x + rows[r] * H, w_->output_norm(), H, c.eps, rows_.data() + r * H);
  out->resize(n * c.vocab);
  if (n) kernels::matmul(w_->output(), rows_.data(), static_cast<int>(n), out->data(), *pool_);
}

Status LlamaForward::forward(const StepInput& s, std::vector<float>* logits_out) {
  PRIMA_RETURN_IF_ERROR(check(s));
  std::vector<float> x;
  embed(s, &x);
  PRIMA_RETURN_IF_ERROR(layers(s, x.data()));
  logits(s, x.data(), logits_out);
  return ok_status();
}

}  // namespace prima::real
