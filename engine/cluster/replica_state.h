// Replica lifecycle states and a replica's utilization sample: the vocabulary the engine
// shares with its monitors (HealthMonitor, LoadMigrator, Autoscaler) and collaborators.
#pragma once

#include "engine/runtime.h"

namespace prima::cluster {

// kUnhealthy: out of routing after failures (health checks), probed until it recovers; then
// kLoading (reloading weights) and kActive again.
enum class ReplicaState { kLoading, kActive, kDraining, kRemoved, kUnhealthy };

// One replica's GPU utilization since the last sample (for the autoscaler).
struct ReplicaLoad {
  ReplicaId id = 0;
  double utilization = 0;  // busy fraction of its GPUs
  double window_s = 0;     // how long it was active in the window
};

}  // namespace prima::cluster
