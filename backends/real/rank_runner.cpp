// RankRunner (see rank_runner.h): step broadcast, stage execution, activations between
// stages, sampled ids back to the leader. One thread per process.
#include "backends/real/rank_runner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace prima::real {

namespace {
constexpr int kTagStep = 101;
constexpr int kTagHidden = 102;
constexpr int kTagTokens = 103;
constexpr int kTagPong = 104;
// Logit rows computed at once on the CPU path (256 x SmolLM2's 49,152 floats: 48 MiB).
constexpr std::size_t kLogitSlice = 256;

// The log-probabilities of `target` and the `n` most likely ids at one row of raw logits.
TokenLogprobs score_row(const float* logits, int vocab, int target, int n,
                        std::vector<std::pair<float, int>>* scratch) {
  TokenLogprobs lp;
  const double lse = log_sum_exp(logits, vocab);
  lp.logprob = target >= 0 && target < vocab
                   ? static_cast<float>(static_cast<double>(logits[target]) - lse)
                   : -INFINITY;
  lp.top = top_logprobs(logits, vocab, std::min(n, SamplingParams::kMaxTopLogprobs), lse, scratch);
  return lp;
}

}  // namespace

std::pair<int, int> stage_layers(int layers, int pp, int stage) {
  const int base = layers / pp, rem = layers % pp;
  const int begin = stage * base + std::min(stage, rem);
  return {begin, begin + base + (stage < rem ? 1 : 0)};
}

RankRunner::RankRunner(RankLayout layout, Communicator* world, Communicator* tp_group,
                       const LlamaWeights* weights, KvStore* kv, kernels::ThreadPool* pool)
    : layout_(layout),
      world_(world),
      fwd_(weights, kv, pool,
           tp_group ? LlamaForward::AllReduce([tp_group](float* d, std::size_t n) {
             return tp_group->allreduce_sum(d, n);
           })
                    : LlamaForward::AllReduce()),
      w_(weights) {}

Status RankRunner::send_all(const StepInput& s) {
  const int world = layout_.tp * layout_.pp;
  if (world == 1) return ok_status();
  const auto bytes = encode_step(s);
  for (int r = 1; r < world; ++r) PRIMA_RETURN_IF_ERROR(world_->send_msg(r, kTagStep, bytes));
  return ok_status();
}

Status RankRunner::run_stage(const StepInput& s, SampledTokens* out) {
  std::vector<int>* tokens = &out->ids;
  tokens->assign(s.seqs.size(), -1);
  out->logprobs.clear();
  if (s.seqs.empty()) return ok_status();
  // The rows whose logits are read (StepInput::logit_rows): per sequence its scored prompt
  // positions (the target id), then its sampling row (-1).
  const std::vector<std::int64_t> rows = s.logit_rows();
  std::vector<std::pair<std::size_t, int>> uses;
  uses.reserve(rows.size());
  for (std::size_t i = 0; i < s.seqs.size(); ++i) {
    for (int target : s.seqs[i].score_ids) uses.emplace_back(i, target);
    if (s.seqs[i].samples) uses.emplace_back(i, -1);
  }
  const int V = w_->config().vocab;
  const bool lps = s.wants_logprobs();
  if (lps) out->logprobs.resize(s.seqs.size());
  if (s.wants_prompt_logprobs()) out->prompt_logprobs.resize(s.seqs.size());
  // Scores or samples uses [b, e), whose logits are rows 0 .. e - b of logits_.
  auto consume = [&](std::size_t b, std::size_t e) {
    for (std::size_t k = b; k < e; ++k) {
      const auto [i, target] = uses[k];
      const SeqInput& q = s.seqs[i];
      float* row = logits_.data() + (k - b) * std::size_t(V);
      const DeviceRow* d = k < done_.size() && done_[k].done ? &done_[k] : nullptr;
      if (target >= 0) {
        out->prompt_logprobs[i].push_back(
            d ? d->logprobs
              : score_row(row, V, target, q.sampling.prompt_logprobs, &scratch_.pairs));
        continue;
      }
      if (d) {  // the device drew it
        (*tokens)[i] = d->token;
        if (lps) out->logprobs[i] = d->logprobs;
        continue;
      }
      const std::int64_t pos = q.pos0 + static_cast<std::int64_t>(q.tokens.size());
      const TokenHistory h{&q.prompt_history, &q.output_history};
      (*tokens)[i] = sample_row(row, V, q.sampling, h, q.request, pos, &scratch_,
                                lps ? &out->logprobs[i] : nullptr);
    }
  };
  if (device_) {
    // The device forward pass receives and sends the stage's hidden states itself.
    PRIMA_RETURN_IF_ERROR(device_->forward_sampled(s, &logits_, &done_));
    if (!layout_.last_stage() || layout_.tp_rank() != 0) return ok_status();
    if (logits_.size() != uses.size() * std::size_t(V))
      return internal_error("the device forward pass returned " + std::to_string(logits_.size()) +
                            " logits for " + std::to_string(uses.size()) + " rows");
    consume(0, uses.size());
  } else {
    done_.clear();
    const int H = w_->config().hidden;
    const std::size_t T = static_cast<std::size_t>(s.total_tokens());
    PRIMA_RETURN_IF_ERROR(fwd_.check(s));
    if (layout_.first_stage()) {
      fwd_.embed(s, &x_);
    } else {
      x_.resize(T * H);
      PRIMA_RETURN_IF_ERROR(world_->recv(layout_.rank_of(layout_.stage() - 1, layout_.tp_rank()),
                                         kTagHidden, x_.data(), x_.size() * sizeof(float)));
    }
    PRIMA_RETURN_IF_ERROR(fwd_.layers(s, x_.data()));
    if (!layout_.last_stage())
      return world_->send(layout_.rank_of(layout_.stage() + 1, layout_.tp_rank()), kTagHidden,
                          x_.data(), x_.size() * sizeof(float));
    if (layout_.tp_rank() != 0) return ok_status();
    // A scored prompt chunk can have thousands of rows: their logits (rows x vocab floats) are
    // made and used a slice at a time.
    for (std::size_t b = 0; b < rows.size(); b += kLogitSlice) {
      const std::size_t e = std::min(rows.size(), b + kLogitSlice);
      fwd_.logits_at(rows.data() + b, e - b, x_.data(), &logits_);
      consume(b, e);
    }
  }
  if (layout_.rank == 0) return ok_status();
  // The last stage's answer to the leader: what was sampled and scored.
  return world_->send_msg(0, kTagTokens, encode_reply(ok_status(), *out));
}

Status RankRunner::begin_step(const StepInput& s) {
  PRIMA_RETURN_IF_ERROR(fwd_.check(s));
  PRIMA_RETURN_IF_ERROR(send_all(s));
  SampledTokens tokens;
  PRIMA_RETURN_IF_ERROR(run_stage(s, &tokens));
  if (layout_.pp == 1) done_tokens_.push_back(std::move(tokens));
  return ok_status();
}

Result<SampledTokens> RankRunner::finish_step(const StepInput& s) {
  if (layout_.pp == 1) {
    if (done_tokens_.empty()) return internal_error("finish_step without begin_step");
    auto t = std::move(done_tokens_.front());
    done_tokens_.pop_front();
    return t;
  }
  SampledTokens t;
  t.ids.assign(s.seqs.size(), -1);
  if (s.seqs.empty()) return t;
  const int last = layout_.rank_of(layout_.pp - 1, 0);
  PRIMA_ASSIGN_OR_RETURN(auto bytes, world_->recv_msg(last, kTagTokens));
  PRIMA_ASSIGN_OR_RETURN(t, decode_reply(bytes));
  if (t.ids.size() != s.seqs.size())
    return internal_error("rank " + std::to_string(last) + " sent " + std::to_string(t.ids.size()) +
                          " token ids for a step of " + std::to_string(s.seqs.size()) +
                          " sequences");
  return t;
}

Status RankRunner::ping() {
  StepInput s;
  s.kind = StepKind::kPing;
  PRIMA_RETURN_IF_ERROR(send_all(s));
  for (int r = 1; r < layout_.tp * layout_.pp; ++r) {
    std::uint8_t b = 0;
    Status st = world_->recv(r, kTagPong, &b, 1);
    if (!st.ok()) return unavailable("rank " + std::to_string(r) + ": " + st.message());
  }
  return ok_status();
}

void RankRunner::shutdown() {
  if (shut_down_ || layout_.rank != 0) return;
  shut_down_ = true;
  StepInput s;
  s.kind = StepKind::kShutdown;
  (void)send_all(s);
}

Status RankRunner::run_worker(bool keep_going) {
  for (;;) {
    std::uint64_t step_id = 0;
    Status st = [&]() -> Status {
      auto msg = world_->recv_msg(0, kTagStep);
      if (!msg.ok()) {
        if (msg.status().code() == StatusCode::kDeadlineExceeded) return ok_status();  // idle
        return msg.status();
      }
      PRIMA_ASSIGN_OR_RETURN(StepInput s, decode_step(*msg));
      step_id = s.step_id;
      if (s.kind == StepKind::kShutdown) {
        shut_down_ = true;
        return ok_status();
      }
      if (s.kind == StepKind::kPing) {
        const std::uint8_t b = 1;
        return world_->send(0, kTagPong, &b, 1);
      }
      SampledTokens tokens;
      return run_stage(s, &tokens);
    }();
    if (shut_down_) return ok_status();
    if (st.ok()) continue;
    if (!keep_going) return st;
    std::fprintf(stderr, "prima (rank %d of its replica): step %llu failed: %s\n", layout_.rank,
                 static_cast<unsigned long long>(step_id), st.message().c_str());
  }
}

}  // namespace prima::real
