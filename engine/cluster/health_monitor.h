// HealthMonitor: the engine's health checks (HealthOptions). It counts each replica's
// consecutive failed steps (a StepResult whose status is not ok: the same path for a sim
// fault and a real device error) and says when the replica must be taken out of routing;
// while any replica is unhealthy it probes them every probe_interval_s through
// Executor::check_health, with its own probe_timeout_s (a late answer is ignored), and after
// probes_to_mark_up good probes in a row asks the engine to bring the replica back
// (ServingEngine reloads its weights when it can, then serves again).
// The probe timer only runs while some replica is unhealthy: fault-free runs get no events.
// It records its probes (probes, probes_failed) in the ClusterCounters it is given.
// Not thread-safe (engine loop). Borrows the Runtime and the engine (which owns it), seen
// only through HealthTarget.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/cluster/cluster_counters.h"
#include "engine/cluster/cluster_options.h"
#include "engine/cluster/replica_state.h"
#include "engine/runtime.h"

namespace prima::cluster {

// What the HealthMonitor needs from the engine (ServingEngine implements it).
class HealthTarget {
 public:
  // Replica ids are 0 .. num_replicas() - 1 (removed replicas keep their id).
  virtual int num_replicas() const = 0;
  virtual ReplicaState replica_state(ReplicaId id) const = 0;
  // The executor probed through Executor::check_health.
  virtual Executor* executor_of(ReplicaId id) const = 0;
  // Good probes: bring the replica back (reload its weights, then serve). False when it
  // cannot start yet (its work is still being taken out): the next probe retries.
  virtual bool begin_recovery(ReplicaId id) = 0;

 protected:
  ~HealthTarget() = default;
};

class HealthMonitor {
 public:
  HealthMonitor(Runtime* rt, HealthTarget* engine, HealthOptions o, ClusterCounters* counters);
  ~HealthMonitor();
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

  const HealthOptions& options() const { return opts_; }
  bool enabled() const { return opts_.enabled; }
  // A finished step of replica `id`. True when it has now failed failures_to_mark_down
  // times in a row (the engine takes the replica out).
  bool on_step(ReplicaId id, const Status& st);
  // The replica was taken out (or its reload failed): probe it until it recovers.
  void on_down(ReplicaId id, Status why);
  // The replica serves again (or was removed): forget its probe state.
  void on_up(ReplicaId id);
  // The error that took the replica out (ok when it never failed).
  Status last_error(ReplicaId id) const;
  // Cancels the probe timer and the pending probes' timeouts (answers after this are
  // ignored). A later on_down starts probing again.
  void stop();

 private:
  struct State {
    int consecutive_failures = 0;
    int good_probes = 0;
    std::uint64_t probe = 0;  // token of the probe awaiting its answer (0: none)
    TimerId timeout = kNoTimer;
    Status last_error;
  };
  State& state(ReplicaId id);
  void arm();
  void probe_all();
  void on_probe(ReplicaId id, std::uint64_t token, Status st);

  Runtime* rt_;
  HealthTarget* engine_;
  HealthOptions opts_;
  ClusterCounters* counters_;  // records probes, probes_failed
  std::vector<State> st_;      // by replica id (grown on demand)
  TimerId timer_ = kNoTimer;
  bool stopped_ = false;  // stop() is final (the run is over)
  std::uint64_t next_token_ = 1;
  // Probe answers capture a weak reference: an answer after the engine is gone is dropped.
  std::shared_ptr<HealthMonitor*> alive_;
};

}  // namespace prima::cluster
