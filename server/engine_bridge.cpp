// EngineBridge: HTTP threads -> the engine's loop -> per-request token streams.
#include "server/engine_bridge.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>

#include "server/text_codec.h"

namespace prima::server {
namespace {

double unit_draw(std::uint64_t seed, std::uint64_t n) {  // splitmix64 -> [0, 1)
  std::uint64_t z = seed + (n + 1) * 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return static_cast<double>((z ^ (z >> 31)) >> 11) * 0x1.0p-53;
}

}  // namespace

void synthetic_logprobs(std::uint64_t seed, int index, int top_n, const TextCodec& codec,
                        StreamToken* t) {
  // Output token i is synthetic word i % 32 (synthetic_text.h); it is the most likely token
  // at its position, with logprob -2u (u uniform from the seed and i), and the k-th
  // alternative is word (i + k) % 32, each 0.5 to 1.5 nats below the one before.
  t->has_logprob = true;
  double lp = -2.0 * unit_draw(seed, static_cast<std::uint64_t>(index));
  t->logprob = static_cast<float>(lp);
  t->top.clear();
  for (int k = 0; k < top_n; ++k) {
    const int word = index + k;
    if (k > 0)
      lp -= 0.5 + unit_draw(seed ^ 0x5bd1e995u, static_cast<std::uint64_t>(index) * 64 + k);
    t->top.push_back({word % 32, codec.piece(word, word % 32), static_cast<float>(lp)});
  }
}

EngineBridge::EngineBridge(cluster::ServingEngine* engine, Runtime* rt, PostFn post,
                           const TextCodec* codec)
    : engine_(engine),
      rt_(rt),
      post_(std::move(post)),
      codec_(codec ? codec : &synthetic_codec()),
      stop_ids_(codec_->stop_ids()),
      seed_base_((static_cast<std::uint64_t>(std::random_device{}()) << 32) ^
                 std::random_device{}()) {
  engine_->on_token = [this](const Sequence& s) {
    const int idx = s.num_generated - 1;
    const int id = idx >= 0 && idx < static_cast<int>(s.output_ids.size()) ? s.output_ids[idx] : -1;
    std::shared_ptr<TokenStream> st;
    double last = -1;
    StreamToken t;
    t.index = idx;
    t.id = id;
    t.time_s = rt_->now();
    bool stopped = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = streams_.find(s.req.id);
      if (it == streams_.end()) return;
      Entry& e = it->second;
      if (e.text.stopped()) return;  // ending early: later tokens are dropped
      st = e.stream;
      last = e.last_token_s;
      e.last_token_s = t.time_s;
      t.piece = codec_->piece(idx, id);
      t.text = e.text.push(token_text(s, e, idx, id), idx + 1 >= e.min_tokens);
      stopped = e.text.stopped();
    }
    if (idx == 0 && s.req.sampling.prompt_logprobs >= 0) t.prompt = prompt_tokens(s);
    t.special = id >= 0 && std::find(stop_ids_.begin(), stop_ids_.end(), id) != stop_ids_.end();
    if (const int n = s.req.sampling.logprobs; n >= 0) {
      if (id < 0) {
        synthetic_logprobs(s.req.sampling.seed, idx, n, *codec_, &t);
      } else {
        t.has_logprob = true;
        t.logprob = s.last_logprobs.logprob;
        // piece(index, id) of the real codec reads the id only.
        for (const auto& [alt, lp] : s.last_logprobs.top)
          t.top.push_back({alt, codec_->piece(alt, alt), lp});
      }
    }
    // The first token can reach its client before the slice ends and publishes: /health must
    // already show what the request holds then (it is in the engine, its KV blocks taken).
    if (idx == 0) publish();
    st->push(std::move(t));
    if (metrics_) metrics_->on_token(s, last >= 0 ? rt_->now() - last : -1);
    if (stopped) engine_->finish_early(s.req.id);  // a stop string: ends as completed
  };
  engine_->on_end = [this](const Sequence& s) {
    std::shared_ptr<TokenStream> st;
    std::string tail;
    bool stop_sequence = false;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = streams_.find(s.req.id);
      if (it == streams_.end()) return;
      st = std::move(it->second.stream);
      if (s.outcome == Outcome::kCompleted) tail = it->second.text.flush();
      stop_sequence = it->second.text.stopped();
      streams_.erase(it);
    }
    if (metrics_) metrics_->on_end(s);
    StreamEnd e;
    e.outcome = s.outcome;
    e.reason = s.reason;
    e.finish_reason = s.outcome != Outcome::kCompleted             ? ""
                      : !s.finish_reason.empty()                   ? s.finish_reason
                      : s.num_generated >= s.req.max_output_tokens ? "length"
                                                                   : "stop";
    e.prompt_tokens = s.req.prompt_tokens;
    e.output_tokens = s.num_generated;
    e.tail_text = std::move(tail);
    e.seed = s.req.sampling.seed;
    e.sampled = s.req.sampling.temperature > 0;
    e.stop_sequence = stop_sequence;
    e.arrival_s = s.req.arrival_s;
    e.first_scheduled_s = s.first_scheduled_s;
    e.first_token_s = s.first_token_s;
    e.finish_s = s.finish_s;
    st->finish(std::move(e));
    ++ended_;
    --open_;
  };
}

std::string EngineBridge::token_text(const Sequence& s, const Entry& e, int idx, int id) const {
  std::string text = codec_->piece(idx, id);
  // A control token's text shows with skip_special_tokens false.
  if (text.empty() && !e.skip_special && id >= 0) text = codec_->control_text(id);
  // The stop token that ends the request (end of generation, stop_token_ids) stays out of
  // the text unless include_stop_str_in_output, as vLLM does.
  const bool ends =
      id >= 0 && s.num_generated >= s.req.min_tokens &&
      std::find(s.req.stop_ids.begin(), s.req.stop_ids.end(), id) != s.req.stop_ids.end();
  return ends && !e.include_stop ? "" : text;
}

std::vector<StreamToken> EngineBridge::prompt_tokens(const Sequence& s) const {
  const int n = s.req.prompt_tokens, top = s.req.sampling.prompt_logprobs;
  const bool real = !s.req.prompt_ids.empty() && !s.output_ids.empty();
  std::vector<StreamToken> out(static_cast<std::size_t>(std::max(0, n)));
  for (int k = 0; k < n; ++k) {
    StreamToken& t = out[k];
    t.index = k;
    t.id = k < static_cast<int>(s.req.prompt_ids.size()) ? s.req.prompt_ids[k] : k;
    t.piece = codec_->id_text(t.id);
    if (k == 0) continue;  // no context: no log-probability (null in every API)
    if (!real) {
      synthetic_logprobs(~s.req.sampling.seed, k, top, *codec_, &t);
      continue;
    }
    if (k - 1 >= static_cast<int>(s.prompt_logprobs.size())) continue;
    const TokenLogprobs& lp = s.prompt_logprobs[k - 1];
    t.has_logprob = true;
    t.logprob = lp.logprob;
    for (const auto& [alt, v] : lp.top) t.top.push_back({alt, codec_->id_text(alt), v});
  }
  return out;
}

void EngineBridge::set_metrics(ServerMetrics* m, const metrics::Recorder* rec, int gpus) {
  metrics_ = m;
  recorder_ = rec;
  gpus_ = gpus;
  engine_->on_step = [this](std::int64_t tokens) {
    if (metrics_) metrics_->on_step_tokens(tokens);
  };
}

std::shared_ptr<TokenStream> EngineBridge::submit(const GenRequest& g, RequestId* id_out) {
  const RequestId id = next_id_++;
  auto st = std::make_shared<TokenStream>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    // Before the engine can see the request.
    streams_.emplace(id, Entry{st, -1, TextDecoder(g.stop, g.include_stop_str), g.min_tokens,
                               g.skip_special_tokens, g.include_stop_str});
  }
  ++open_;
  ++submitted_;
  Request r;
  r.id = id;
  r.prompt_tokens = g.prompt_tokens;
  r.max_output_tokens = g.max_tokens;
  r.priority = g.priority;
  r.sla_s = g.sla_s;
  r.prompt_ids = g.prompt_ids;
  r.sampling = g.sampling;
  if (!g.has_seed) {  // splitmix64 of the id: distinct, unpredictable seeds
    std::uint64_t z = seed_base_ + static_cast<std::uint64_t>(id) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    r.sampling.seed = z ^ (z >> 31);
  }
  if (!g.ignore_eos) r.stop_ids = stop_ids_;
  r.stop_ids.insert(r.stop_ids.end(), g.stop_token_ids.begin(), g.stop_token_ids.end());
  r.min_tokens = g.min_tokens;
  post_([this, r = std::move(r)]() mutable {
    r.arrival_s = rt_->now();  // arrives at the loop's current time
    engine_->submit(std::move(r));
    // /health counts the request from now on, not from the next gauge tick: its first token
    // can reach the client before that tick (a short prompt on a fast backend).
    publish();
  });
  if (id_out) *id_out = id;
  return st;
}

void EngineBridge::cancel(RequestId id, const std::string& reason) {
  post_([this, id, reason] {
    engine_->cancel(id, reason);
    publish();
  });
}

void EngineBridge::fail_all(const std::string& reason) {
  post_([this, reason] { engine_->fail_all(reason); });
}

void EngineBridge::publish() {
  const auto es = engine_->state();
  EngineSnapshot s;
  s.in_system = es.in_system;
  s.running = es.running;
  s.waiting = es.waiting;
  s.kv_usage = es.kv_usage;
  for (const auto& r : engine_->replicas()) {
    s.kv_free_blocks += r->kv().free_blocks();
    s.kv_blocks += r->kv().num_blocks();
  }
  s.now_s = rt_->now();
  s.published = true;
  using cluster::ReplicaState;
  s.replicas_active = engine_->count(ReplicaState::kActive);
  s.replicas_unhealthy = engine_->count(ReplicaState::kUnhealthy);
  s.replicas_loading = engine_->count(ReplicaState::kLoading);
  s.replicas_draining = engine_->count(ReplicaState::kDraining);
  s.reroutes = engine_->counters().reroutes;
  if (s.replicas_unhealthy > 0)
    for (const auto& r : engine_->replicas())
      if (engine_->replica_state(r->id()) == ReplicaState::kUnhealthy) {
        s.replica_error = engine_->health().last_error(r->id()).message();
        break;
      }
  // A replica taken out (or back) is news for whoever runs the server.
  if (s.replicas_unhealthy != unhealthy_seen_) {
    if (s.replicas_unhealthy > unhealthy_seen_)
      fmt::print(stderr, "prima serve: {} of {} replica(s) taken out of routing: {}\n",
                 s.replicas_unhealthy, s.replicas(), s.replica_error);
    else
      fmt::print(stderr, "prima serve: {} of {} replica(s) unhealthy, {} serving\n",
                 s.replicas_unhealthy, s.replicas(), s.replicas_active);
    unhealthy_seen_ = s.replicas_unhealthy;
  }
  if (metrics_) {
    metrics_->on_state(s.now_s, s.running, s.waiting, s.kv_usage,
                       recorder_ ? recorder_->preemptions() : 0,
                       recorder_ ? recorder_->busy_gpu_seconds() : 0, gpus_);
    metrics_->on_replicas(s.replicas_active, s.replicas_unhealthy, s.replicas_loading,
                          s.replicas_draining);
    if (recorder_) metrics_->on_flops(recorder_->flops());
    std::int64_t queried = 0, hit = 0;
    for (const auto& r : engine_->replicas()) {
      queried += r->kv().prefix_lookup_tokens();
      hit += r->kv().prefix_hit_tokens();
    }
    metrics_->on_prefix_cache(queried, hit);
    if (!engine_->replicas().empty()) {  // the first replica's (published once)
      const auto& kv = engine_->replicas().front()->kv();
      metrics_->set_cache_config(kv.block_size(), kv.num_blocks(), kv.prefix_caching());
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  snap_ = s;
}

EngineSnapshot EngineBridge::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  EngineSnapshot s = snap_;
  s.submitted = submitted_.load();
  s.ended = ended_.load();
  return s;
}

}  // namespace prima::server
