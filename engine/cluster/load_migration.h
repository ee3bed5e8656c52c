// LoadMigrator: dynamic load migration (MigrationOptions; seed 000's hot nodes). Every
// interval_s, while the engine has work, it estimates each active replica's speed from its
// finished steps (tokens computed per busy second of its steps over the interval; the last
// estimate is kept through an interval without steps, and a replica never measured counts
// at the median speed) and its expected wait (work left in tokens / speed). Waiting
// sequences that hold nothing on their replica (Replica::movable) move from replicas whose
// expected wait exceeds imbalance_ratio x the median to the replica with the shortest
// expected wait, while that helps, at most max_moves_per_interval per interval.
// relative_speed() feeds the router (faster replicas get more new work).
// Speed is per busy second rather than per second of sim time so that an idle replica is
// not mistaken for a slow one (on a saturated replica the two agree).
// It records the sequences it moved (migrations) in the ClusterCounters it is given.
// Not thread-safe (engine loop). Borrows the Runtime and the engine (which owns it), seen
// only through MigrationTarget.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/cluster/cluster_counters.h"
#include "engine/cluster/cluster_options.h"
#include "engine/runtime.h"

namespace prima::cluster {

class Replica;

// What the LoadMigrator needs from the engine (ServingEngine implements it).
class MigrationTarget {
 public:
  // The active replicas that take new requests; the migrator moves work between them
  // (Replica::movable, cancel, submit).
  virtual const std::vector<Replica*>& routing_pool() const = 0;
  // Requests in the system: the evaluation timer runs while there are any.
  virtual std::int64_t in_system() const = 0;

 protected:
  ~MigrationTarget() = default;
};

class LoadMigrator {
 public:
  LoadMigrator(Runtime* rt, MigrationTarget* engine, MigrationOptions o, ClusterCounters* counters)
      : rt_(rt), engine_(engine), opts_(o), counters_(counters) {}
  ~LoadMigrator() { stop(); }
  LoadMigrator(const LoadMigrator&) = delete;
  LoadMigrator& operator=(const LoadMigrator&) = delete;

  // A successful step of replica `id` (tokens it computed, its busy seconds).
  void on_step(ReplicaId id, std::int64_t tokens, double busy_s);
  // The engine has work: starts the periodic evaluation if it is not running.
  void on_work();
  void stop();
  // One evaluation: updates the speeds and moves work. Returns the sequences moved.
  int evaluate();
  // Measured speed (tokens per busy second); 0 when never measured.
  double speed(ReplicaId id) const;
  // Speed relative to the mean of the active replicas' measured speeds (1 when unknown).
  double relative_speed(ReplicaId id) const;

 private:
  struct Stats {
    double tokens = 0, busy_s = 0;  // this interval
    double speed = 0;               // tokens per busy second, last estimate (0: unknown)
  };
  Stats& stats(ReplicaId id);

  Runtime* rt_;
  MigrationTarget* engine_;
  MigrationOptions opts_;
  ClusterCounters* counters_;  // records migrations
  std::vector<Stats> stats_;   // by replica id
  double mean_speed_ = 0;      // over active replicas with a measured speed
  TimerId timer_ = kNoTimer;
};

}  // namespace prima::cluster
