// ServingEngine: the serving engine both backends run. It owns the requests' sequences,
// routes each new request to a replica, and reports every request's end exactly once
// (completed, rejected with a reason, or failed with a reason) to the Recorder and to the
// caller's hooks. Time and devices come only through the seam (Runtime, Executors, Fabric).
//
// Cluster policies (ClusterOptions; all off by default):
//  - replicas added and removed at run time (add_replica / drain_replica, driven by the
//    Autoscaler): a new replica is created by the ReplicaProvider, loads its weights (the
//    provider's `load`, e.g. from storage over the fabric) and only then accepts requests;
//    a drained replica accepts nothing new, finishes its work, then is handed back;
//  - disaggregated prefill/decode pools: requests go to a prefill replica; at its first token
//    the sequence's KV (num_computed x kv_bytes_per_token) moves over the Fabric to a decode
//    replica picked by the router, which decodes the rest (bounded retries on failure);
//  - a response cache answering repeated short prompts without a replica;
//  - warm-up requests per replica at start(), not reported as requests;
//  - health checks and failover (HealthOptions, on by default; they act only on failures):
//    a replica whose steps keep failing is paused and taken out of routing (kUnhealthy);
//    once its steps in flight returned, its sequences are re-prefilled on healthy replicas
//    (bounded re-routes per request); requests that find no healthy replica wait at the
//    engine (bounded); probes bring the replica back (reloading its weights). See
//    HealthMonitor and failover.cpp. min_available bounds voluntary removals (drains);
//  - load migration (MigrationOptions, off by default): see LoadMigrator.
// Not thread-safe: every call runs on the engine's loop (servers post into it).
// Owns the sequences, the replicas and the autoscaler; borrows the Runtime, Executors,
// Fabric and Recorder.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/cluster/cluster_options.h"
#include "engine/cluster/replica.h"
#include "engine/cluster/response_cache.h"
#include "engine/cluster/router.h"
#include "engine/metrics/recorder.h"
#include "engine/sched/scheduler.h"

namespace prima::cluster {

class Autoscaler;
class HealthMonitor;
class LoadMigrator;

struct ReplicaSetup {
  Executor* executor = nullptr;  // borrowed; outlives the engine
  int gpus = 1;                  // GPUs of this replica (tp * pp)
  int num_kv_blocks = 0;
  int stage_gpus = 1;  // GPUs per pipeline stage (tp): busy time per stage x this
  // Device ids per pipeline stage (for per-GPU utilization and KV transfers); may be empty.
  std::vector<std::vector<DeviceId>> devices;
};

// How the engine gets replicas at run time (autoscaling). Given by the wiring.
struct ReplicaProvider {
  // A replica on free GPUs, or nullopt when none are free.
  std::function<std::optional<ReplicaSetup>(ReplicaId)> create;
  // Loads the weights; done(ok) when the replica can serve. Null: ready at once.
  std::function<void(ReplicaId, const ReplicaSetup&, std::function<void(Status)>)> load;
  // Health checks also call `load` for a replica that recovers after a failure (when
  // HealthOptions::reload_weights), including the replicas given at construction.
  // The replica was removed (after draining) or failed to load: its GPUs are free again.
  std::function<void(ReplicaId, const ReplicaSetup&)> release;
};

struct EngineOptions {
  sched::SchedulerOptions scheduler;
  RoutingPolicy routing = RoutingPolicy::kRoundRobin;  // overridden by cluster.router.policy
  int max_model_len = 0;  // prompt + output tokens at most (0 = no limit beyond KV capacity)
  // When set, cluster.router is used as is (routing above is ignored).
  bool use_cluster_router = false;
  ClusterOptions cluster;
  double kv_bytes_per_token = 0;  // whole replica (all layers, all KV heads): P/D hand-off size
};

// kUnhealthy: out of routing after failures (health checks), probed until it recovers; then
// kLoading (reloading weights) and kActive again.
enum class ReplicaState { kLoading, kActive, kDraining, kRemoved, kUnhealthy };
enum class ReplicaRole { kBoth, kPrefill, kDecode };

// A snapshot for timelines and gauges.
struct EngineState {
  int running = 0, waiting = 0, replicas_up = 0;  // up: active or draining
  int replicas_loading = 0, replicas_draining = 0;
  int replicas_unhealthy = 0;  // out of routing after failures (health checks)
  std::int64_t pending = 0;    // requests waiting at the engine for a healthy replica
  double kv_usage = 0;         // mean over replicas up
  std::int64_t in_system = 0;
};

// One replica's GPU utilization since the last sample (for the autoscaler).
struct ReplicaLoad {
  ReplicaId id = 0;
  double utilization = 0;  // busy fraction of its GPUs
  double window_s = 0;     // how long it was active in the window
};

struct ClusterCounters {
  std::int64_t scale_ups = 0, scale_downs = 0, load_failures = 0;
  int replicas_min_seen = 0, replicas_max_seen = 0;
  std::int64_t handoffs = 0, handoff_retries = 0, handoff_failures = 0;
  double handoff_bytes = 0;
  std::int64_t warmup_requests = 0, warmup_completed = 0;
  // GPUs held by replicas (loading, active or draining) integrated over time, up to the
  // last change; see ServingEngine::provisioned_gpu_seconds().
  double provisioned_gpu_s = 0;
  // Health checks and failover (HealthOptions), load migration (MigrationOptions).
  std::int64_t replica_failures = 0;    // replicas taken out of routing (kActive -> kUnhealthy)
  std::int64_t replica_recoveries = 0;  // back to kActive after probes (and reload)
  std::int64_t probes = 0, probes_failed = 0;
  std::int64_t step_failures = 0;      // failed steps seen (any replica)
  std::int64_t reroutes = 0;           // requests moved off a failed replica
  std::int64_t retries_exhausted = 0;  // requests failed after max_request_retries
  std::int64_t migrations = 0;         // waiting sequences moved by load migration
  double below_min_available_s = 0;    // time with fewer healthy replicas than min_available
};

class ServingEngine {
 public:
  ServingEngine(Runtime* rt, EngineOptions opts, const std::vector<ReplicaSetup>& replicas,
                metrics::Recorder* recorder);
  ~ServingEngine();

  // Optional collaborators, set before start().
  void set_fabric(Fabric* f) { fabric_ = f; }
  void set_replica_provider(ReplicaProvider p) { provider_ = std::move(p); }

  // Sends the warm-up requests and starts the autoscaler (when configured). Without it the
  // engine serves as before (no warm-up, fixed replicas).
  void start();
  // Stops periodic work (the autoscaler's, health probes', load migration's timers) so the
  // loop can run dry.
  void stop();

  // Submits a request (its id is assigned when 0). Returns the id. The request may end
  // immediately (rejected) if no replica can ever hold it.
  RequestId submit(Request r);

  // Cancels a request (a client went away): it is taken out of wherever it is (its replica's
  // queue or batch, a KV hand-off, the engine's wait for a healthy replica), its KV blocks are
  // freed, and it ends once as failed with `reason`. A sequence in a step on the devices is
  // taken out when that step returns (its result is dropped). False when the id is not in
  // the system (already ended, or unknown): cancelling twice is harmless.
  bool cancel(RequestId id, const std::string& reason);
  // Ends a request early as completed, finish_reason "stop" (the server found a stop string
  // in its text). Otherwise like cancel(): taken out wherever it is, blocks freed, a step on
  // the devices is waited for (its tokens are dropped). False when the id is not in the system.
  bool finish_early(RequestId id);

  // Hooks: called on the loop. on_end runs once per request, after the recorder saw it.
  std::function<void(const Sequence&)> on_token;
  std::function<void(const Sequence&)> on_end;

  // Ends every request still in the system (on replicas, in hand-off, waiting at the engine
  // for a healthy replica) as failed with `reason` (end of a run); stops periodic work. The
  // replicas are not touched: call this only when no further events will be processed.
  void fail_all(const std::string& reason);

  // Run-time replicas. add_replica: -1 when the provider has no free GPUs (or none is set).
  ReplicaId add_replica();
  // Stops routing to an active replica; it is removed once idle. False if not active, or
  // when it would leave fewer active replicas than HealthOptions::min_available (a
  // voluntary removal never breaks the budget).
  bool drain_replica(ReplicaId id);
  ReplicaState replica_state(ReplicaId id) const { return info_[id].state; }
  ReplicaRole replica_role(ReplicaId id) const { return info_[id].role; }
  int count(ReplicaState s) const;
  // GPUs held by replicas that are loading, active or draining.
  int gpus_held() const;
  // GPU-seconds held by replicas from construction until now (autoscaling cost).
  double provisioned_gpu_seconds() const;
  // Seconds so far with fewer active replicas than HealthOptions::min_available (0 when
  // min_available is 0); counters().below_min_available_s up to the last state change.
  double below_min_available_seconds() const;
  // Requests waiting at the engine for a healthy replica.
  std::int64_t pending() const { return static_cast<std::int64_t>(pending_.size()); }
  // Utilization of each active replica since the previous call (or since it became active).
  std::vector<ReplicaLoad> sample_utilization();

  EngineState state() const;
  std::int64_t in_system() const { return static_cast<std::int64_t>(live_.size()); }
  const std::vector<std::unique_ptr<Replica>>& replicas() const { return replicas_; }
  const EngineOptions& options() const { return opts_; }
  const ClusterCounters& counters() const { return counters_; }
  ClusterCounters* mutable_counters() { return &counters_; }  // for the autoscaler
  const ResponseCache& response_cache() const { return cache_; }
  const Autoscaler* autoscaler() const { return autoscaler_.get(); }
  const HealthMonitor& health() const { return *health_; }
  const LoadMigrator* migrator() const { return migrator_.get(); }

 private:
  friend class HealthMonitor;
  friend class LoadMigrator;

  struct ReplicaInfo {
    ReplicaSetup setup;
    ReplicaState state = ReplicaState::kActive;
    ReplicaRole role = ReplicaRole::kBoth;
    double busy_s = 0;         // GPU-busy seconds / gpus, all time
    double busy_mark_s = 0;    // busy_s at the last sample
    Time mark_s = 0;           // time of the last sample (or activation)
    int pending_handoffs = 0;  // KV transfers heading to it
    // Health: its work was taken out after it went down; recovering: kLoading after probes;
    // retire: it was draining when it failed (removed once its work is out).
    bool evacuated = false, recovering = false, retire = false;
  };
  struct Pending {  // a request waiting for a healthy replica
    Sequence* seq = nullptr;
    TimerId timeout = kNoTimer;
  };
  struct Handoff {
    ReplicaId src = -1;
    std::vector<ReplicaId> tried;
    int pending = 0;
    Status status;
  };

  ReplicaId make_replica(const ReplicaSetup& rs, ReplicaState st, ReplicaRole role);
  void activate(ReplicaId id);
  void rebuild_routing();
  void maybe_remove(ReplicaId id);
  void note_replica_count();  // call after any state change
  Time held_since_ = 0;
  int gpus_held_ = 0;
  void send_warmup(ReplicaId id);
  bool is_warmup(const Sequence* s) const { return s->req.id >= kWarmupIdBase; }
  void start_handoff(Sequence* s);
  void transfer_kv(RequestId id, ReplicaId dst);
  void on_transfer_done(RequestId id, ReplicaId dst, Status st);
  void end(Sequence* s, Outcome o, std::string reason);
  void finish_cancel(RequestId id);  // a cancelled sequence's step returned
  void integrate_below_min(Time now);

  // Health checks and failover (failover.cpp).
  void on_step_health(ReplicaId id, const StepResult& r);
  void mark_down(ReplicaId id, const Status& why);
  void evacuate(ReplicaId id);
  void reroute(Sequence* s, ReplicaId from);
  Replica* pick_healthy(const Sequence& s);  // nullptr when no healthy replica can take it
  void route_or_wait(Sequence* s);
  void wait_for_replica(Sequence* s);
  void on_pending_timeout(RequestId id);
  void drain_pending();
  bool recovering_anywhere() const;
  bool begin_recovery(ReplicaId id);
  void reload(ReplicaId id);  // provider_.load, then finish_recovery or back to kUnhealthy  // true
                              // when it is on its way back
  void finish_recovery(ReplicaId id);
  Executor* executor_of(ReplicaId id) const { return info_[id].setup.executor; }
  const std::vector<Replica*>& routing_pool() const { return accepting_; }

  static constexpr RequestId kWarmupIdBase = RequestId(1) << 62;

  Runtime* rt_;
  EngineOptions opts_;
  metrics::Recorder* recorder_;
  Fabric* fabric_ = nullptr;
  ReplicaProvider provider_;
  ReplicaEvents events_;
  std::vector<std::unique_ptr<Replica>> replicas_;  // by id; removed ones stay (state kRemoved)
  std::vector<ReplicaInfo> info_;                   // by id
  std::vector<Replica*> accepting_;                 // active, takes new requests
  std::vector<Replica*> decode_pool_;               // active decode replicas (disaggregated)
  Router router_;
  Router decode_router_;
  ResponseCache cache_;
  std::unique_ptr<Autoscaler> autoscaler_;
  std::unique_ptr<HealthMonitor> health_;
  std::unique_ptr<LoadMigrator> migrator_;
  std::deque<Pending> pending_;  // by priority class, FIFO within a class
  Time below_since_ = 0;         // time of the last below-min_available integration
  bool below_min_ = false;
  ClusterCounters counters_;
  RequestId next_id_ = 1;
  RequestId next_warmup_id_ = kWarmupIdBase;
  std::unordered_map<RequestId, std::unique_ptr<Sequence>> live_;
  std::unordered_map<RequestId, std::unique_ptr<Sequence>> warm_;
  std::unordered_map<RequestId, Handoff> handoffs_;
  // Leaving the system (cancel, finish_early) while in a step on the devices: how it ends.
  struct Leaving {
    Outcome outcome = Outcome::kFailed;
    std::string reason;
  };
  bool take_out(RequestId id, Leaving how);
  void end_leaving(Sequence* s, Leaving how);
  std::unordered_map<RequestId, Leaving> cancelling_;  // until its step returns
};

}  // namespace prima::cluster
