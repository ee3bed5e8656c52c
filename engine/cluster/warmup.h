// Warmup: the warm-up requests (WarmupOptions) sent to a replica when it starts serving
// (at start(), after a scale-up, after a recovery). It owns their sequences and records the
// warm-up counters (warmup_requests, warmup_completed) in the ClusterCounters it is given.
// Warm-up sequences carry ids from kIdBase up, never reach the Recorder or the caller's
// hooks, and are not requests of the run: the engine hands each back here when it ends
// (complete) or when its replica fails (drop).
// Not thread-safe (engine loop).
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>

#include "engine/cluster/cluster_counters.h"
#include "engine/cluster/cluster_options.h"
#include "engine/cluster/replica.h"

namespace prima::cluster {

class Warmup {
 public:
  static constexpr RequestId kIdBase = RequestId(1) << 62;

  Warmup(Runtime* rt, WarmupOptions o, ClusterCounters* counters)
      : rt_(rt), opts_(o), counters_(counters) {}
  Warmup(const Warmup&) = delete;
  Warmup& operator=(const Warmup&) = delete;

  static bool is_warmup(const Sequence& s) { return s.req.id >= kIdBase; }
  // Submits up to WarmupOptions::requests warm-ups to r (stops at the first that can never
  // fit it).
  void send(Replica* r);
  // A warm-up ended on its replica: counted as completed and freed.
  void complete(const Sequence& s);
  // A warm-up taken off a failed replica: freed (not re-routed, not counted).
  void drop(const Sequence& s);

 private:
  Runtime* rt_;
  WarmupOptions opts_;
  RequestId next_id_ = kIdBase;
  ClusterCounters* counters_;  // records warmup_requests, warmup_completed
  std::unordered_map<RequestId, std::unique_ptr<Sequence>> live_;
};

}  // namespace prima::cluster
