#include "engine/cluster/health_monitor.h"

#include <fmt/format.h>

namespace prima::cluster {

HealthMonitor::HealthMonitor(Runtime* rt, HealthTarget* engine, HealthOptions o,
                             ClusterCounters* counters)
    : rt_(rt),
      engine_(engine),
      opts_(o),
      counters_(counters),
      alive_(std::make_shared<HealthMonitor*>(this)) {}

HealthMonitor::~HealthMonitor() {
  stop();
}

HealthMonitor::State& HealthMonitor::state(ReplicaId id) {
  if (static_cast<std::size_t>(id) >= st_.size()) st_.resize(id + 1);
  return st_[id];
}

bool HealthMonitor::on_step(ReplicaId id, const Status& st) {
  State& s = state(id);
  if (st.ok()) {
    s.consecutive_failures = 0;
    return false;
  }
  s.last_error = st;
  return ++s.consecutive_failures >= opts_.failures_to_mark_down;
}

void HealthMonitor::on_down(ReplicaId id, Status why) {
  State& s = state(id);
  if (!why.ok()) s.last_error = std::move(why);
  s.good_probes = 0;
  arm();
}

void HealthMonitor::on_up(ReplicaId id) {
  State& s = state(id);
  s.consecutive_failures = 0;
  s.good_probes = 0;
  s.probe = 0;
  if (s.timeout != kNoTimer) rt_->cancel(s.timeout);
  s.timeout = kNoTimer;
}

Status HealthMonitor::last_error(ReplicaId id) const {
  return static_cast<std::size_t>(id) < st_.size() ? st_[id].last_error : ok_status();
}

void HealthMonitor::stop() {
  stopped_ = true;  // for good: late answers and failed reloads arm nothing after the run
  if (timer_ != kNoTimer) rt_->cancel(timer_);
  timer_ = kNoTimer;
  for (State& s : st_) {
    if (s.timeout != kNoTimer) rt_->cancel(s.timeout);
    s.timeout = kNoTimer;
    s.probe = 0;
  }
}

void HealthMonitor::arm() {
  if (timer_ != kNoTimer || stopped_) return;
  timer_ = rt_->at(rt_->now() + opts_.probe_interval_s, [this] {
    timer_ = kNoTimer;
    probe_all();
  });
}

void HealthMonitor::probe_all() {
  const auto n = static_cast<ReplicaId>(engine_->num_replicas());
  for (ReplicaId id = 0; id < n; ++id) {
    if (engine_->replica_state(id) != ReplicaState::kUnhealthy) continue;
    State& s = state(id);
    if (s.probe != 0) continue;  // the previous probe is still within its timeout
    const std::uint64_t token = next_token_++;
    s.probe = token;
    ++counters_->probes;
    s.timeout = rt_->at(rt_->now() + opts_.probe_timeout_s, [this, id, token] {
      State& t = state(id);
      if (t.probe != token) return;
      t.timeout = kNoTimer;
      on_probe(id, token,
               unavailable(fmt::format("health probe of replica {} not answered within {} s", id,
                                       opts_.probe_timeout_s)));
    });
    std::weak_ptr<HealthMonitor*> alive = alive_;
    engine_->executor_of(id)->check_health([alive, id, token](Status st) {
      if (auto self = alive.lock()) (*self)->on_probe(id, token, std::move(st));
    });
  }
  // Answers may have brought replicas back already: probe again only if some are still out.
  for (ReplicaId id = 0; id < n; ++id)
    if (engine_->replica_state(id) == ReplicaState::kUnhealthy) return arm();
}

void HealthMonitor::on_probe(ReplicaId id, std::uint64_t token, Status st) {
  State& s = state(id);
  if (s.probe != token) return;  // late (timed out) or stale answer
  s.probe = 0;
  if (s.timeout != kNoTimer) rt_->cancel(s.timeout);
  s.timeout = kNoTimer;
  if (engine_->replica_state(id) != ReplicaState::kUnhealthy) return;
  if (!st.ok()) {
    ++counters_->probes_failed;
    s.good_probes = 0;
    return;
  }
  if (++s.good_probes < opts_.probes_to_mark_up) return;
  // The engine brings it back once its work has been taken out; else the next probe retries.
  if (engine_->begin_recovery(id)) s.good_probes = 0;
}

}  // namespace prima::cluster
