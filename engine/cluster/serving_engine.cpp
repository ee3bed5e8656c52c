#include "engine/cluster/serving_engine.h"

#include <fmt/format.h>

#include <algorithm>

namespace prima::cluster {

ServingEngine::ServingEngine(Runtime* rt, EngineOptions opts,
                             const std::vector<ReplicaSetup>& replicas, metrics::Recorder* recorder)
    : rt_(rt), opts_(opts), recorder_(recorder), router_(opts.routing) {
  events_.on_token = [this](Sequence* s) {
    recorder_->on_token(rt_->now());
    if (on_token) on_token(*s);
  };
  events_.on_finished = [this](Sequence* s) { end(s, Outcome::kCompleted, ""); };
  events_.on_failed = [this](Sequence* s) { end(s, Outcome::kFailed, s->reason); };
  events_.on_step = [this](ReplicaId id, const sched::ScheduledStep& step, const StepResult& r) {
    double gpu_s = 0;
    for (double b : r.stage_busy_s) gpu_s += b * stage_gpus_[id];
    const auto& devs = devices_[id];
    for (std::size_t s = 0; s < r.stage_busy_s.size() && s < devs.size(); ++s)
      for (DeviceId d : devs[s]) recorder_->on_device_busy(d, r.stage_busy_s[s]);
    recorder_->on_step(r.start_s, r.end_s, gpu_s, r.flops);
    if (step.preempted) recorder_->on_preemptions(step.preempted);
  };
  int total_gpus = 0;
  for (std::size_t i = 0; i < replicas.size(); ++i) {
    const auto& rs = replicas[i];
    replicas_.push_back(std::make_unique<Replica>(static_cast<ReplicaId>(i), rs.gpus, rt,
                                                  rs.executor, opts_.scheduler, rs.num_kv_blocks,
                                                  &events_));
    replica_ptrs_.push_back(replicas_.back().get());
    stage_gpus_.push_back(rs.stage_gpus);
    devices_.push_back(rs.devices);
    total_gpus += rs.gpus;
  }
  if (recorder_->gpus() == 0) recorder_->set_gpus(total_gpus);
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
  int idx = router_.pick(replica_ptrs_, *s);
  if (idx < 0) {
    end(s, Outcome::kRejected,
        fmt::format("{} tokens exceed the KV cache of every replica", s->max_tokens()));
    return id;
  }
  replicas_[idx]->submit(s);
  return id;
}

void ServingEngine::end(Sequence* s, Outcome o, std::string reason) {
  s->outcome = o;
  s->reason = std::move(reason);
  s->finish_s = rt_->now();
  recorder_->on_end(*s, s->finish_s);
  if (on_end) on_end(*s);
  live_.erase(s->req.id);
}

void ServingEngine::fail_all(const std::string& reason) {
  std::vector<RequestId> ids;
  for (const auto& [id, seq] : live_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());  // deterministic order
  for (RequestId id : ids) end(live_.at(id).get(), Outcome::kFailed, reason);
}

EngineState ServingEngine::state() const {
  EngineState st;
  for (const auto& r : replicas_) {
    st.running += r->num_running();
    st.waiting += r->num_waiting();
    st.kv_usage += r->kv().usage();
    ++st.replicas_up;
  }
  if (!replicas_.empty()) st.kv_usage /= double(replicas_.size());
  st.in_system = in_system();
  return st;
}

}  // namespace prima::cluster
