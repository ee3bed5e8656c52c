// RankRunner (see rank_runner.h): step broadcast, stage execution, activations between
// stages, sampled ids back to the leader. One thread per process.
#include "backends/real/rank_runner.h"

#include <string>

#include "backends/real/sampler.h"

namespace prima::real {

namespace {
constexpr int kTagStep = 101;
constexpr int kTagHidden = 102;
constexpr int kTagTokens = 103;
constexpr int kTagPong = 104;
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

Status RankRunner::run_stage(const StepInput& s, std::vector<int>* tokens) {
  tokens->assign(s.seqs.size(), -1);
  if (s.seqs.empty()) return ok_status();
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
  const int V = w_->config().vocab;
  int r = 0;
  for (std::size_t i = 0; i < s.seqs.size(); ++i) {
    const auto& q = s.seqs[i];
    if (!q.samples) continue;
    const std::int64_t pos = q.pos0 + static_cast<std::int64_t>(q.tokens.size());
    (*tokens)[i] =
        sample_token(logits_.data() + std::size_t(r) * V, V, q.sampling, q.request, pos, &scratch_);
    ++r;
  }
  if (layout_.rank == 0) return ok_status();
  return world_->send(0, kTagTokens, tokens->data(), tokens->size() * sizeof(int));
}

Status RankRunner::begin_step(const StepInput& s) {
  PRIMA_RETURN_IF_ERROR(fwd_.check(s));
  PRIMA_RETURN_IF_ERROR(send_all(s));
  std::vector<int> tokens;
  PRIMA_RETURN_IF_ERROR(run_stage(s, &tokens));
  if (layout_.pp == 1) done_tokens_.push_back(std::move(tokens));
  return ok_status();
}

Result<std::vector<int>> RankRunner::finish_step(const StepInput& s) {
  if (layout_.pp == 1) {
    if (done_tokens_.empty()) return internal_error("finish_step without begin_step");
    auto t = std::move(done_tokens_.front());
    done_tokens_.pop_front();
    return t;
  }
  std::vector<int> tokens(s.seqs.size(), -1);
  if (s.seqs.empty()) return tokens;
  PRIMA_RETURN_IF_ERROR(world_->recv(layout_.rank_of(layout_.pp - 1, 0), kTagTokens, tokens.data(),
                                     tokens.size() * sizeof(int)));
  return tokens;
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

Status RankRunner::run_worker() {
  for (;;) {
    auto msg = world_->recv_msg(0, kTagStep);
    if (!msg.ok()) {
      if (msg.status().code() == StatusCode::kDeadlineExceeded) continue;  // idle leader
      return msg.status();
    }
    PRIMA_ASSIGN_OR_RETURN(StepInput s, decode_step(*msg));
    if (s.kind == StepKind::kShutdown) return ok_status();
    if (s.kind == StepKind::kPing) {
      const std::uint8_t b = 1;
      PRIMA_RETURN_IF_ERROR(world_->send(0, kTagPong, &b, 1));
      continue;
    }
    std::vector<int> tokens;
    PRIMA_RETURN_IF_ERROR(run_stage(s, &tokens));
  }
}

}  // namespace prima::real
