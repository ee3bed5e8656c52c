// Replica lifecycle states, a replica's utilization sample and the engine's sequence and
// replica lookup: the vocabulary the engine shares with its monitors (HealthMonitor,
// LoadMigrator, Autoscaler) and collaborators (KvHandoff, Cancellations).
#pragma once

#include "engine/runtime.h"

namespace prima::cluster {

class Replica;

// kUnhealthy: out of routing after failures (health checks), probed until it recovers; then
// kLoading (reloading weights) and kActive again.
enum class ReplicaState { kLoading, kActive, kDraining, kRemoved, kUnhealthy };

// One replica's GPU utilization since the last sample (for the autoscaler).
struct ReplicaLoad {
  ReplicaId id = 0;
  double utilization = 0;  // busy fraction of its GPUs
  double window_s = 0;     // how long it was active in the window
};

// The engine's sequences and replicas by id, for collaborators that act on them (the base of
// HandoffHost and CancelHost; ServingEngine implements it).
class SequenceHost {
 public:
  // The live sequence with this id; nullptr once it ended.
  virtual Sequence* live_sequence(RequestId id) = 0;
  virtual Replica* replica(ReplicaId id) = 0;

 protected:
  ~SequenceHost() = default;
};

}  // namespace prima::cluster
