// ServingEngine's failover (health checks, HealthOptions): taking a failed replica out,
// moving its requests to healthy replicas or into the PendingQueue (requests waiting for a
// healthy replica), and bringing a replica back after its probes. The HealthMonitor decides
// when (consecutive failed steps, probes); this file does the moves. Every request still
// ends exactly once: re-routed (re-prefilled elsewhere), or failed with a reason when its
// re-routes are exhausted or it waited pending_timeout_s for a healthy replica.
#include <fmt/format.h>

#include <algorithm>

#include "engine/cluster/health_monitor.h"
#include "engine/cluster/serving_engine.h"

namespace prima::cluster {

void ServingEngine::on_step_health(ReplicaId id, const StepResult& r) {
  ReplicaInfo& ri = info_[id];
  const bool down = health_->on_step(id, r.status);
  if (down && (ri.state == ReplicaState::kActive || ri.state == ReplicaState::kDraining))
    mark_down(id, r.status);
  // Its work is taken out once no step of it is on the devices any more.
  if (ri.state == ReplicaState::kUnhealthy && !ri.evacuated && replicas_[id]->inflight_steps() == 0)
    rt_->post([this, id] { evacuate(id); });
}

void ServingEngine::mark_down(ReplicaId id, const Status& why) {
  ReplicaInfo& ri = info_[id];
  ri.retire = ri.state == ReplicaState::kDraining;  // it was leaving anyway: removed
  ri.state = ReplicaState::kUnhealthy;
  ri.evacuated = false;
  replicas_[id]->pause();  // a dead device fails every step at once: do not spin
  ++counters_.replica_failures;
  rebuild_routing();
  note_replica_count();
  if (!ri.retire) health_->on_down(id, why);
}

void ServingEngine::evacuate(ReplicaId id) {
  {
    const ReplicaInfo& ri = info_[id];
    if (ri.state != ReplicaState::kUnhealthy || ri.evacuated || replicas_[id]->inflight_steps() > 0)
      return;
  }
  info_[id].evacuated = true;
  std::vector<Sequence*> seqs = replicas_[id]->take_all();
  std::stable_sort(seqs.begin(), seqs.end(), [](const Sequence* a, const Sequence* b) {
    if (a->req.priority != b->req.priority) return a->req.priority < b->req.priority;
    if (a->req.arrival_s != b->req.arrival_s) return a->req.arrival_s < b->req.arrival_s;
    return a->req.id < b->req.id;
  });
  for (Sequence* s : seqs) reroute(s, id);
  if (info_[id].retire) {
    info_[id].state = ReplicaState::kRemoved;
    health_->on_up(id);
    note_replica_count();
    if (provider_.release) provider_.release(id, info_[id].setup);
  }
}

void ServingEngine::reroute(Sequence* s, ReplicaId from) {
  if (is_warmup(s)) {  // not a client request: dropped
    warmup_.drop(*s);
    return;
  }
  const int max = opts_.cluster.health.max_request_retries;
  if (s->reroutes >= max) {
    ++counters_.retries_exhausted;
    end(s, Outcome::kFailed,
        fmt::format("replica {} failed ({}); the request was re-routed {} times already "
                    "(max_request_retries {})",
                    from, health_->last_error(from).message(), s->reroutes, max));
    return;
  }
  ++s->reroutes;
  ++counters_.reroutes;
  s->step_failures = 0;  // step retries count per replica
  route_or_wait(s);
}

Replica* ServingEngine::pick_healthy(const Sequence& s) {
  // A sequence that already produced tokens decodes on the decode pool when there is one.
  const bool decode =
      opts_.cluster.disaggregation.enabled() && s.num_generated > 0 && !decode_pool_.empty();
  if (decode) {
    const int idx = decode_router_.pick(decode_pool_, s);
    if (idx >= 0) return decode_pool_[idx];
  }
  const int idx = router_.pick(accepting_, s);
  return idx >= 0 ? accepting_[idx] : nullptr;
}

void ServingEngine::route_or_wait(Sequence* s) {
  if (Replica* r = pick_healthy(*s))
    r->submit(s);
  else
    pending_.add(s);
}

void ServingEngine::on_pending_timeout(Sequence* s) {
  end(s, Outcome::kFailed,
      fmt::format("no healthy replica could take the request within {} s (pending_timeout; "
                  "{} replicas unhealthy)",
                  opts_.cluster.health.pending_timeout_s, count(ReplicaState::kUnhealthy)));
}

void ServingEngine::drain_pending() {
  pending_.drain([this](const Sequence& s) { return pick_healthy(s); });
}

bool ServingEngine::recovering_anywhere() const {
  for (const ReplicaInfo& ri : info_)
    if ((ri.state == ReplicaState::kUnhealthy && !ri.retire) ||
        (ri.state == ReplicaState::kLoading && ri.recovering))
      return true;
  return false;
}

bool ServingEngine::begin_recovery(ReplicaId id) {
  ReplicaInfo& ri = info_[id];
  if (ri.state != ReplicaState::kUnhealthy || !ri.evacuated || ri.retire) return false;
  if (!opts_.cluster.health.reload_weights || !provider_.load) {
    finish_recovery(id);
    return true;
  }
  ri.state = ReplicaState::kLoading;
  ri.recovering = true;
  note_replica_count();
  // The worker restarts (process, NCCL communicators) before it reloads its weights.
  const double restart = opts_.cluster.health.restart_s;
  if (restart > 0) {
    rt_->at(rt_->now() + restart, [this, id] {
      if (info_[id].state == ReplicaState::kLoading && info_[id].recovering) reload(id);
    });
    return true;
  }
  reload(id);
  return true;
}

void ServingEngine::reload(ReplicaId id) {
  ReplicaInfo& ri = info_[id];
  provider_.load(id, ri.setup, [this, id](Status st) {
    ReplicaInfo& r = info_[id];
    if (r.state != ReplicaState::kLoading || !r.recovering) return;
    if (!st.ok()) {  // back to probing
      ++counters_.load_failures;
      r.state = ReplicaState::kUnhealthy;
      r.recovering = false;
      note_replica_count();
      health_->on_down(id, st);
      return;
    }
    finish_recovery(id);
  });
}

void ServingEngine::finish_recovery(ReplicaId id) {
  ReplicaInfo& ri = info_[id];
  ri.recovering = false;
  ri.evacuated = false;
  health_->on_up(id);
  ++counters_.replica_recoveries;
  replicas_[id]->resume();
  activate(id);  // routing, warm-up, then the requests waiting for a healthy replica
}

}  // namespace prima::cluster
