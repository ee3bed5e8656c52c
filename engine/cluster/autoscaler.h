// Autoscaler: HPA-like replica count control (seed 004). Every interval_s on the Runtime it
// samples the active replicas' GPU utilization since the last evaluation (step busy time),
// computes desired = ceil(active * utilization / target) (unchanged within the tolerance),
// clamps it to [min_replicas, max_replicas] and
//  - scales up at once: new replicas are created by the engine's ReplicaProvider and accept
//    requests only once their weights are loaded (startup_s + the provider's load);
//  - scales down to the highest desired count seen over the stabilization window, and only
//    while no replica is loading, draining the least utilized replicas first (idle ones,
//    below scale_down_utilization, go first; with scale_down_idle_only, only those).
// It records its actions (scale_ups, scale_downs) in the ClusterCounters it is given.
// Not thread-safe (engine loop). Borrows the Runtime and the engine (which owns it), seen
// only through ScalingTarget.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "engine/cluster/cluster_counters.h"
#include "engine/cluster/cluster_options.h"
#include "engine/cluster/replica_state.h"
#include "engine/runtime.h"

namespace prima::cluster {

// What the Autoscaler needs from the engine (ServingEngine implements it).
class ScalingTarget {
 public:
  // Replicas in state s (kActive, kLoading).
  virtual int count(ReplicaState s) const = 0;
  // Utilization of each active replica since the previous call (or since it became active).
  virtual std::vector<ReplicaLoad> sample_utilization() = 0;
  // A new replica (loading); -1 when no GPUs are free.
  virtual ReplicaId add_replica() = 0;
  // Stops routing to an active replica, removed once idle; false when it cannot.
  virtual bool drain_replica(ReplicaId id) = 0;

 protected:
  ~ScalingTarget() = default;
};

class Autoscaler {
 public:
  Autoscaler(Runtime* rt, ScalingTarget* engine, AutoscalerOptions o, ClusterCounters* counters)
      : rt_(rt), engine_(engine), opts_(o), counters_(counters) {}
  ~Autoscaler() { stop(); }
  void start();  // first evaluation one interval from now
  void stop();
  // One evaluation (also called by the timer).
  void evaluate();

  const AutoscalerOptions& options() const { return opts_; }
  double last_utilization() const { return last_utilization_; }
  int last_desired() const { return last_desired_; }

 private:
  Runtime* rt_;
  ScalingTarget* engine_;
  AutoscalerOptions opts_;
  ClusterCounters* counters_;  // records scale_ups, scale_downs
  TimerId timer_ = kNoTimer;
  std::deque<std::pair<Time, int>> history_;  // (time, desired) within the window
  double last_utilization_ = 0;
  int last_desired_ = 0;
};

}  // namespace prima::cluster
