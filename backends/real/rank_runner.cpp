// RankRunner (see rank_runner.h): step broadcast, stage execution, activations between
// stages, sampled ids back to the leader. One thread per process.
#include "backends/real/rank_runner.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace prima::real {

namespace {
constexpr int kTagStep = 101;
constexpr int kTagHidden = 102;
constexpr int kTagTokens = 103;
constexpr int kTagPong = 104;
constexpr int kTagLogprobs = 105;

// Log-probabilities between ranks: per sequence a fixed record of floats (the sampled
// token's logprob, the count n of alternatives, then n (id, logprob) pairs, ids as floats:
// exact below 2^24), padded to the largest n.
constexpr std::size_t kLpRecord = 2 + 2 * SamplingParams::kMaxTopLogprobs;

std::vector<float> pack_logprobs(const std::vector<TokenLogprobs>& lps) {
  std::vector<float> out(lps.size() * kLpRecord, 0.f);
  for (std::size_t i = 0; i < lps.size(); ++i) {
    float* r = out.data() + i * kLpRecord;
    r[0] = lps[i].logprob;
    const std::size_t n = std::min<std::size_t>(lps[i].top.size(), SamplingParams::kMaxTopLogprobs);
    r[1] = static_cast<float>(n);
    for (std::size_t k = 0; k < n; ++k) {
      r[2 + 2 * k] = static_cast<float>(lps[i].top[k].first);
      r[3 + 2 * k] = lps[i].top[k].second;
    }
  }
  return out;
}

std::vector<TokenLogprobs> unpack_logprobs(const std::vector<float>& in, std::size_t seqs) {
  std::vector<TokenLogprobs> out(seqs);
  for (std::size_t i = 0; i < seqs; ++i) {
    const float* r = in.data() + i * kLpRecord;
    out[i].logprob = r[0];
    const int n = std::clamp(static_cast<int>(r[1]), 0, SamplingParams::kMaxTopLogprobs);
    for (int k = 0; k < n; ++k)
      out[i].top.emplace_back(static_cast<int>(r[2 + 2 * k]), r[3 + 2 * k]);
  }
  return out;
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
  if (device_) {
    PRIMA_RETURN_IF_ERROR(device_->forward(s, &logits_));
  } else {
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
    fwd_.logits(s, x_.data(), &logits_);
  }
  const int V = w_->config().vocab;
  const bool lps = s.wants_logprobs();
  if (lps) out->logprobs.resize(s.seqs.size());
  int r = 0;
  for (std::size_t i = 0; i < s.seqs.size(); ++i) {
    const auto& q = s.seqs[i];
    if (!q.samples) continue;
    const std::int64_t pos = q.pos0 + static_cast<std::int64_t>(q.tokens.size());
    const TokenHistory h{&q.prompt_history, &q.output_history};
    (*tokens)[i] = sample_row(logits_.data() + std::size_t(r) * V, V, q.sampling, h, q.request, pos,
                              &scratch_, lps ? &out->logprobs[i] : nullptr);
    ++r;
  }
  if (layout_.rank == 0) return ok_status();
  PRIMA_RETURN_IF_ERROR(world_->send(0, kTagTokens, tokens->data(), tokens->size() * sizeof(int)));
  if (!lps) return ok_status();
  const auto packed = pack_logprobs(out->logprobs);
  return world_->send(0, kTagLogprobs, packed.data(), packed.size() * sizeof(float));
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
  PRIMA_RETURN_IF_ERROR(world_->recv(last, kTagTokens, t.ids.data(), t.ids.size() * sizeof(int)));
  if (s.wants_logprobs()) {
    std::vector<float> packed(s.seqs.size() * kLpRecord);
    PRIMA_RETURN_IF_ERROR(
        world_->recv(last, kTagLogprobs, packed.data(), packed.size() * sizeof(float)));
    t.logprobs = unpack_logprobs(packed, s.seqs.size());
  }
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
