// EngineBridge: HTTP threads -> the engine's loop -> per-request token streams.
#include "server/engine_bridge.h"

namespace prima::server {

EngineBridge::EngineBridge(cluster::ServingEngine* engine, Runtime* rt, PostFn post)
    : engine_(engine), rt_(rt), post_(std::move(post)) {
  engine_->on_token = [this](const Sequence& s) {
    std::shared_ptr<TokenStream> st;
    double last = -1;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = streams_.find(s.req.id);
      if (it == streams_.end()) return;
      st = it->second.stream;
      last = it->second.last_token_s;
      it->second.last_token_s = rt_->now();
    }
    const int idx = s.num_generated - 1;
    const int id = idx >= 0 && idx < static_cast<int>(s.output_ids.size()) ? s.output_ids[idx] : -1;
    st->push(StreamToken{idx, id, rt_->now()});
    if (metrics_) metrics_->on_token(s.req.priority, last >= 0 ? rt_->now() - last : -1);
  };
  engine_->on_end = [this](const Sequence& s) {
    std::shared_ptr<TokenStream> st;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = streams_.find(s.req.id);
      if (it == streams_.end()) return;
      st = std::move(it->second.stream);
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
    e.arrival_s = s.req.arrival_s;
    e.first_scheduled_s = s.first_scheduled_s;
    e.first_token_s = s.first_token_s;
    e.finish_s = s.finish_s;
    st->finish(std::move(e));
    ++ended_;
    --open_;
  };
}

void EngineBridge::set_metrics(ServerMetrics* m, const metrics::Recorder* rec, int gpus) {
  metrics_ = m;
  recorder_ = rec;
  gpus_ = gpus;
}

std::shared_ptr<TokenStream> EngineBridge::submit(const GenRequest& g, RequestId* id_out) {
  const RequestId id = next_id_++;
  auto st = std::make_shared<TokenStream>();
  {
    std::lock_guard<std::mutex> lock(mu_);
    streams_.emplace(id, Entry{st});  // before the engine can see the request
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
  post_([this, r = std::move(r)]() mutable {
    r.arrival_s = rt_->now();  // arrives at the loop's current time
    engine_->submit(std::move(r));
  });
  if (id_out) *id_out = id;
  return st;
}

void EngineBridge::cancel(RequestId id, const std::string& reason) {
  post_([this, id, reason] { engine_->cancel(id, reason); });
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
  if (metrics_)
    metrics_->on_state(s.now_s, s.running, s.waiting, s.kv_usage,
                       recorder_ ? recorder_->preemptions() : 0,
                       recorder_ ? recorder_->busy_gpu_seconds() : 0, gpus_);
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
