#include "engine/cluster/serving_engine.h"

#include <fmt/format.h>

#include <algorithm>

namespace prima::cluster {
namespace {

RouterOptions router_options(const EngineOptions& o) {
  RouterOptions r = o.cluster.router;
  if (!o.use_cluster_router) r.policy = o.routing;
  return r;
}

KvHandoff::Options handoff_options(const EngineOptions& o) {
  KvHandoff::Options h;
  h.kv_bytes_per_token = o.kv_bytes_per_token;
  h.max_transfer_retries = o.cluster.disaggregation.max_transfer_retries;
  h.reprefill = o.cluster.health.enabled;
  return h;
}

}  // namespace

ServingEngine::ServingEngine(Runtime* rt, EngineOptions opts,
                             const std::vector<ReplicaSetup>& replicas, metrics::Recorder* recorder)
    : rt_(rt),
      opts_(opts),
      recorder_(recorder),
      router_(router_options(opts).policy, router_options(opts).seed,
              router_options(opts).affinity_slack_tokens),
      decode_router_(router_options(opts).policy, router_options(opts).seed + 1,
                     router_options(opts).affinity_slack_tokens),
      cache_(opts.cluster.response_cache),
      handoff_(rt, this, &decode_router_, &decode_pool_, handoff_options(opts), &counters_),
      pending_(rt, opts.cluster.health.pending_timeout_s,
               [this](Sequence* s) { on_pending_timeout(s); }),
      warmup_(rt, opts.cluster.warmup, &counters_),
      cancels_(rt, this) {
  events_.on_tokens = [this](const std::vector<Sequence*>& produced) {
    // Every sequence that sampled a token this step: counted, streamed (on_token) and, on a
    // prefill replica of a disaggregated cluster, handed to the decode pool after its first.
    std::int64_t n = 0;
    for (Sequence* s : produced) {
      if (is_warmup(s) || cancels_.leaving(s->req.id)) continue;
      n += s->step_new_tokens;
      if (on_token) {
        // A speculative step produced several tokens: on_token sees the sequence as it was
        // after each of them, in order (num_generated counts up to its value). A hook may end
        // the request (a stop string): its later tokens are dropped.
        const RequestId id = s->req.id;
        const int generated = s->num_generated;
        bool ended = false;
        for (int k = s->step_new_tokens - 1; k >= 0 && !ended; --k) {
          s->num_generated = generated - k;
          on_token(*s);
          ended = live_.find(id) == live_.end();
        }
        if (ended) continue;
        s->num_generated = generated;
      }
      if (!decode_pool_.empty() && info_[s->replica].role == ReplicaRole::kPrefill &&
          s->num_generated == 1 && s->num_generated < s->req.max_output_tokens)
        handoff_.start(s);
    }
    recorder_->on_tokens(n);
  };
  events_.on_finished = [this](Sequence* s) {
    if (!cancels_.on_finished(s)) end(s, Outcome::kCompleted, "");
  };
  events_.on_failed = [this](Sequence* s) { end(s, Outcome::kFailed, s->reason); };
  events_.on_step = [this](ReplicaId id, const sched::ScheduledStep& step, const StepResult& r) {
    ReplicaInfo& ri = info_[id];
    double gpu_s = 0;
    for (double b : r.stage_busy_s) gpu_s += b * ri.setup.stage_gpus;
    ri.busy_s += gpu_s / std::max(1, ri.setup.gpus);
    const auto& devs = ri.setup.devices;
    for (std::size_t s = 0; s < r.stage_busy_s.size() && s < devs.size(); ++s)
      for (DeviceId d : devs[s]) recorder_->on_device_busy(d, r.stage_busy_s[s]);
    recorder_->on_step(r.start_s, r.end_s, gpu_s, r.flops);
    if (step.preempted) recorder_->on_preemptions(step.preempted);
    maybe_remove_later(id);
    // Cancelled while on the devices: out of the scheduler now (before it plans the next
    // step; frees the KV blocks), ended once the step's events are delivered.
    cancels_.on_step(replicas_[id].get(), step.seqs);
    if (migrator_ && r.status.ok())
      migrator_->on_step(id, step.batch.shape.tokens(), r.end_s - r.start_s);
    if (!r.status.ok()) ++counters_.step_failures;
    if (on_step && r.status.ok()) on_step(step.batch.shape.tokens());
    if (health_->enabled()) on_step_health(id, r);
  };
  health_ = std::make_unique<HealthMonitor>(rt_, static_cast<HealthTarget*>(this),
                                            opts_.cluster.health, &counters_);
  if (opts_.cluster.migration.enabled) {
    migrator_ = std::make_unique<LoadMigrator>(rt_, static_cast<MigrationTarget*>(this),
                                               opts_.cluster.migration, &counters_);
    router_.set_speed_weight([this](ReplicaId id) { return migrator_->relative_speed(id); });
  }
  const auto& dis = opts_.cluster.disaggregation;
  int total_gpus = 0;
  for (std::size_t i = 0; i < replicas.size(); ++i) {
    ReplicaRole role = ReplicaRole::kBoth;
    if (dis.enabled())
      role =
          static_cast<int>(i) < dis.prefill_replicas ? ReplicaRole::kPrefill : ReplicaRole::kDecode;
    make_replica(replicas[i], ReplicaState::kActive, role);
    total_gpus += replicas[i].gpus;
  }
  rebuild_routing();
  note_replica_count();
  if (recorder_->gpus() == 0) recorder_->set_gpus(total_gpus);
  if (opts_.cluster.autoscaler.enabled)
    autoscaler_ = std::make_unique<Autoscaler>(rt_, static_cast<ScalingTarget*>(this),
                                               opts_.cluster.autoscaler, &counters_);
}

ServingEngine::~ServingEngine() = default;

ReplicaId ServingEngine::make_replica(const ReplicaSetup& rs, ReplicaState st, ReplicaRole role) {
  const auto id = static_cast<ReplicaId>(replicas_.size());
  replicas_.push_back(std::make_unique<Replica>(id, rs.gpus, rt_, rs.executor,
                                                rs.scheduler ? *rs.scheduler : opts_.scheduler,
                                                rs.num_kv_blocks, &events_));
  if (rs.kv_tiers) replicas_.back()->set_kv_tiers(rs.kv_tiers);
  ReplicaInfo ri;
  ri.setup = rs;
  ri.state = st;
  ri.role = role;
  ri.mark_s = rt_->now();
  info_.push_back(std::move(ri));
  return id;
}

void ServingEngine::rebuild_routing() {
  accepting_.clear();
  decode_pool_.clear();
  for (std::size_t i = 0; i < replicas_.size(); ++i) {
    if (info_[i].state != ReplicaState::kActive) continue;
    if (info_[i].role == ReplicaRole::kDecode)
      decode_pool_.push_back(replicas_[i].get());
    else
      accepting_.push_back(replicas_[i].get());
  }
}

int ServingEngine::count(ReplicaState s) const {
  int n = 0;
  for (const auto& ri : info_) n += ri.state == s;
  return n;
}

int ServingEngine::gpus_held() const {
  int n = 0;
  for (const auto& ri : info_)
    if (ri.state != ReplicaState::kRemoved) n += ri.setup.gpus;
  return n;
}

double ServingEngine::provisioned_gpu_seconds() const {
  return counters_.provisioned_gpu_s + double(gpus_held_) * (rt_->now() - held_since_);
}

void ServingEngine::integrate_below_min(Time now) {
  if (below_min_) counters_.below_min_available_s += now - below_since_;
  below_since_ = now;
}

double ServingEngine::below_min_available_seconds() const {
  return counters_.below_min_available_s + (below_min_ ? rt_->now() - below_since_ : 0.0);
}

void ServingEngine::note_replica_count() {
  integrate_below_min(rt_->now());
  const int min_available = opts_.cluster.health.min_available;
  below_min_ = min_available > 0 && count(ReplicaState::kActive) < min_available;
  counters_.provisioned_gpu_s += double(gpus_held_) * (rt_->now() - held_since_);
  held_since_ = rt_->now();
  gpus_held_ = gpus_held();
  // With an autoscaler, timeline utilization is relative to the GPUs serving now.
  if (opts_.cluster.autoscaler.enabled) {
    int serving = 0;
    for (const auto& ri : info_)
      if (ri.state == ReplicaState::kActive || ri.state == ReplicaState::kDraining)
        serving += ri.setup.gpus;
    recorder_->set_gpus(std::max(1, serving));
  }
  const int up = count(ReplicaState::kActive) + count(ReplicaState::kDraining);
  if (counters_.replicas_max_seen == 0 && counters_.replicas_min_seen == 0) {
    counters_.replicas_min_seen = counters_.replicas_max_seen = up;
    return;
  }
  counters_.replicas_min_seen = std::min(counters_.replicas_min_seen, up);
  counters_.replicas_max_seen = std::max(counters_.replicas_max_seen, up);
}

void ServingEngine::start() {
  for (std::size_t i = 0; i < replicas_.size(); ++i)
    if (info_[i].state == ReplicaState::kActive) warmup_.send(replicas_[i].get());
  if (autoscaler_) autoscaler_->start();
}

void ServingEngine::stop() {
  if (autoscaler_) autoscaler_->stop();
  health_->stop();
  if (migrator_) migrator_->stop();
  integrate_below_min(rt_->now());
}

ReplicaId ServingEngine::add_replica() {
  if (!provider_.create) return -1;
  const auto id = static_cast<ReplicaId>(replicas_.size());
  std::optional<ReplicaSetup> rs = provider_.create(id);
  if (!rs) return -1;
  make_replica(*rs, ReplicaState::kLoading, ReplicaRole::kBoth);
  note_replica_count();
  auto loaded = [this, id](Status st) {
    if (info_[id].state != ReplicaState::kLoading) return;
    if (!st.ok()) {
      ++counters_.load_failures;
      info_[id].state = ReplicaState::kRemoved;
      note_replica_count();
      if (provider_.release) provider_.release(id, info_[id].setup);
      return;
    }
    activate(id);
  };
  const double startup = opts_.cluster.autoscaler.startup_s;
  auto do_load = [this, id, loaded] {
    if (provider_.load)
      provider_.load(id, info_[id].setup, loaded);
    else
      loaded(ok_status());
  };
  if (startup > 0)
    rt_->at(rt_->now() + startup, do_load);
  else
    do_load();
  return id;
}

void ServingEngine::activate(ReplicaId id) {
  info_[id].state = ReplicaState::kActive;
  info_[id].mark_s = rt_->now();
  info_[id].busy_mark_s = info_[id].busy_s;
  rebuild_routing();
  note_replica_count();
  warmup_.send(replicas_[id].get());
  drain_pending();
}

bool ServingEngine::drain_replica(ReplicaId id) {
  if (id < 0 || id >= static_cast<ReplicaId>(info_.size()) ||
      info_[id].state != ReplicaState::kActive)
    return false;
  const int min_available = opts_.cluster.health.min_available;
  if (min_available > 0 && count(ReplicaState::kActive) - 1 < min_available) return false;
  info_[id].state = ReplicaState::kDraining;
  rebuild_routing();
  note_replica_count();
  maybe_remove(id);
  return true;
}

void ServingEngine::maybe_remove(ReplicaId id) {
  ReplicaInfo& ri = info_[id];
  if (ri.state != ReplicaState::kDraining || !replicas_[id]->idle() || handoff_.heading_to(id) > 0)
    return;
  ri.state = ReplicaState::kRemoved;
  note_replica_count();
  if (provider_.release) provider_.release(id, ri.setup);
}

void ServingEngine::maybe_remove_later(ReplicaId id) {
  if (id >= 0 && id < static_cast<ReplicaId>(info_.size()) &&
      info_[id].state == ReplicaState::kDraining)
    rt_->post([this, id] { maybe_remove(id); });
}

std::vector<ReplicaLoad> ServingEngine::sample_utilization() {
  std::vector<ReplicaLoad> out;
  const Time now = rt_->now();
  for (std::size_t i = 0; i < info_.size(); ++i) {
    ReplicaInfo& ri = info_[i];
    if (ri.state != ReplicaState::kActive) continue;
    ReplicaLoad l;
    l.id = static_cast<ReplicaId>(i);
    l.window_s = now - ri.mark_s;
    if (opts_.cluster.autoscaler.metric == AutoscalerOptions::Metric::kConcurrency) {
      const Replica& r = *replicas_[i];
      l.utilization =
          double(r.num_running() + r.num_waiting()) / std::max(1, opts_.scheduler.max_num_seqs);
    } else if (l.window_s > 0) {
      l.utilization = std::min(1.0, (ri.busy_s - ri.busy_mark_s) / l.window_s);
    }
    ri.busy_mark_s = ri.busy_s;
    ri.mark_s = now;
    out.push_back(l);
  }
  return out;
}

RequestId ServingEngine::submit(Request r) {
  if (r.id == 0)
    r.id = next_id_++;
  else
    next_id_ = std::max(next_id_, r.id + 1);
  const RequestId id = r.id;
  auto seq = std::make_unique<Sequence>();
  seq->req = std::move(r);
  Sequence* s = seq.get();
  live_.emplace(id, std::move(seq));
  recorder_->on_arrival(s->req.arrival_s);

  if (s->req.prompt_tokens <= 0) {
    end(s, Outcome::kRejected, "empty prompt");
    return id;
  }
  if (s->req.max_output_tokens <= 0) {
    end(s, Outcome::kRejected, "max_output_tokens must be >= 1");
    return id;
  }
  if (opts_.max_model_len > 0 && s->max_tokens() > opts_.max_model_len) {
    end(s, Outcome::kRejected,
        fmt::format("prompt ({}) + output ({}) tokens exceed the context limit {}",
                    s->req.prompt_tokens, s->req.max_output_tokens, opts_.max_model_len));
    return id;
  }
  if (cache_.enabled() && cache_.lookup(s->req, rt_->now())) {
    const Time t = rt_->now() + cache_.options().hit_latency_s;
    s->first_scheduled_s = rt_->now();
    s->first_token_s = t;
    rt_->at(t, [this, id] {
      auto it = live_.find(id);
      if (it == live_.end()) return;
      Sequence* c = it->second.get();
      c->num_generated = c->req.max_output_tokens;
      for (int k = 0; k < c->num_generated; ++k) recorder_->on_token(rt_->now());
      end(c, Outcome::kCompleted, "response_cache");
    });
    return id;
  }
  if (migrator_) migrator_->on_work();
  if (accepting_.empty() && health_->enabled() && recovering_anywhere()) {
    pending_.add(s);  // every replica is down, some will come back
    return id;
  }
  int idx = router_.pick(accepting_, *s);
  if (idx < 0) {
    end(s, Outcome::kRejected,
        accepting_.empty()
            ? std::string("no replica is accepting requests")
            : fmt::format("{} tokens exceed the KV cache of every replica", s->max_tokens()));
    return id;
  }
  accepting_[idx]->submit(s);
  return id;
}

void ServingEngine::end(Sequence* s, Outcome o, std::string reason) {
  if (is_warmup(s)) {
    warmup_.complete(*s);
    return;
  }
  s->outcome = o;
  s->reason = std::move(reason);
  s->finish_s = rt_->now();
  if (o == Outcome::kCompleted && s->reason.empty()) cache_.insert(s->req, s->finish_s);
  recorder_->on_end(*s, s->finish_s);
  if (on_end) on_end(*s);
  const ReplicaId r = s->replica;
  live_.erase(s->req.id);
  maybe_remove_later(r);
}

bool ServingEngine::cancel(RequestId id, const std::string& reason) {
  return cancels_.take_out(id, Cancellations::Leaving{Outcome::kFailed, reason});
}

bool ServingEngine::finish_early(RequestId id) {
  return cancels_.take_out(id, Cancellations::Leaving{Outcome::kCompleted, ""});
}

void ServingEngine::fail_all(const std::string& reason) {
  stop();
  pending_.clear();
  // Steps still in flight hold the sequences about to end: their replicas drop them.
  for (auto& r : replicas_) r->abandon();
  std::vector<RequestId> ids;
  for (const auto& [id, seq] : live_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());  // deterministic order
  for (RequestId id : ids) end(live_.at(id).get(), Outcome::kFailed, reason);
}

EngineState ServingEngine::state() const {
  EngineState st;
  for (std::size_t i = 0; i < replicas_.size(); ++i) {
    const ReplicaState rs = info_[i].state;
    if (rs == ReplicaState::kLoading) ++st.replicas_loading;
    if (rs == ReplicaState::kDraining) ++st.replicas_draining;
    if (rs == ReplicaState::kUnhealthy) ++st.replicas_unhealthy;
    if (rs != ReplicaState::kActive && rs != ReplicaState::kDraining) continue;
    const auto& r = replicas_[i];
    st.running += r->num_running();
    st.waiting += r->num_waiting();
    st.kv_usage += r->kv().usage();
    ++st.replicas_up;
  }
  if (st.replicas_up > 0) st.kv_usage /= double(st.replicas_up);
  st.in_system = in_system();
  st.pending = pending();
  return st;
}

}  // namespace prima::cluster
