// KvHandoff: the prefill -> decode KV hand-off of disaggregated serving
// (DisaggregationOptions). At its first token a sequence leaves its prefill replica; its KV
// (num_computed x kv_bytes_per_token) moves over the Fabric to a decode replica the decode
// router picks (one flow per GPU pair), which then decodes the rest. A failed transfer (or a
// decode replica that went down meanwhile) is retried on another decode replica, at most
// max_transfer_retries times; with health checks on, a sequence with no decode replica left
// is prefilled again wherever it can go. It owns the hand-offs in transit and the count of
// transfers heading to each replica (a draining replica is removed only when none is), and
// records the hand-off counters (handoffs, handoff_retries, handoff_failures, handoff_bytes)
// in the ClusterCounters it is given. Without a Fabric (or nothing to move) a transfer
// completes on the next turn of the loop.
// Not thread-safe (engine loop). Borrows the Runtime, the Fabric, the decode router and pool
// (the engine's), and the engine through HandoffHost.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/cluster/cluster_counters.h"
#include "engine/cluster/replica.h"
#include "engine/cluster/replica_state.h"
#include "engine/cluster/router.h"

namespace prima::cluster {

// What the hand-off needs from the engine (ServingEngine implements it).
class HandoffHost : public SequenceHost {
 public:
  virtual ReplicaState replica_state(ReplicaId id) const = 0;
  // Device ids per pipeline stage of the replica (may be empty).
  virtual const std::vector<std::vector<DeviceId>>& replica_devices(ReplicaId id) const = 0;
  // A draining replica may have become idle: remove it now / on the next turn of the loop.
  virtual void maybe_remove(ReplicaId id) = 0;
  virtual void maybe_remove_later(ReplicaId id) = 0;
  // No decode replica left: prefill the sequence again (num_computed is 0) or let it wait.
  virtual void reprefill(Sequence* s) = 0;
  // Ends the sequence as failed with `reason`.
  virtual void fail(Sequence* s, std::string reason) = 0;

 protected:
  ~HandoffHost() = default;
};

class KvHandoff {
 public:
  struct Options {
    double kv_bytes_per_token = 0;  // whole replica (all layers, all KV heads)
    int max_transfer_retries = 2;
    bool reprefill = false;  // health checks on: no decode replica left -> prefill again
  };
  KvHandoff(Runtime* rt, HandoffHost* host, Router* decode_router,
            const std::vector<Replica*>* decode_pool, Options o, ClusterCounters* counters)
      : rt_(rt),
        host_(host),
        router_(decode_router),
        pool_(decode_pool),
        opts_(o),
        counters_(counters) {}
  KvHandoff(const KvHandoff&) = delete;
  KvHandoff& operator=(const KvHandoff&) = delete;

  void set_fabric(Fabric* f) { fabric_ = f; }
  // s produced its first token on a prefill replica: takes it off that replica and moves
  // its KV to a decode replica (fails it when no decode replica can ever hold it).
  void start(Sequence* s);
  // The request's KV is in transit (it is on no replica).
  bool in_transit(RequestId id) const { return handoffs_.count(id) > 0; }
  // Transfers in flight towards replica `id`.
  int heading_to(ReplicaId id) const {
    return static_cast<std::size_t>(id) < heading_.size() ? heading_[id] : 0;
  }

 private:
  struct Handoff {
    ReplicaId src = -1;
    std::vector<ReplicaId> tried;
    int pending = 0;  // flows still in flight
    Status status;
  };
  void transfer(RequestId id, ReplicaId dst);
  void on_done(RequestId id, ReplicaId dst, Status st);
  int& heading(ReplicaId id);

  Runtime* rt_;
  HandoffHost* host_;
  Router* router_;
  const std::vector<Replica*>* pool_;
  Options opts_;
  Fabric* fabric_ = nullptr;
  std::unordered_map<RequestId, Handoff> handoffs_;
  std::vector<int> heading_;   // by replica id (grown on demand)
  ClusterCounters* counters_;  // records handoffs, handoff_retries, handoff_failures, _bytes
};

}  // namespace prima::cluster
