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
//    the sequence's KV moves to a decode replica (KvHandoff);
//  - a response cache answering repeated short prompts without a replica;
//  - warm-up requests per replica at start(), not reported as requests (Warmup);
//  - health checks and failover (HealthOptions, on by default; they act only on failures):
//    a replica whose steps keep failing is paused and taken out of routing (kUnhealthy);
//    once its steps in flight returned, its sequences are re-prefilled on healthy replicas
//    (bounded re-routes per request); requests that find no healthy replica wait at the
//    engine (bounded; PendingQueue); probes bring the replica back (reloading its weights).
//    See HealthMonitor and failover.cpp. min_available bounds voluntary removals (drains);
//  - load migration (MigrationOptions, off by default): see LoadMigrator.
// The engine is the coordinator: it owns the sequences and the replicas (their states,
// roles, routing pools) and wires its collaborators, each owning one concern and its
// counters: KvHandoff, PendingQueue, Warmup, ResponseCache, and the monitors HealthMonitor,
// LoadMigrator and Autoscaler, which see the engine only through the interfaces they
// declare (HealthTarget, MigrationTarget, ScalingTarget). Each collaborator records its own
// counters into the engine's ClusterCounters (cluster_counters.h says which fields).
// Not thread-safe: every call runs on the engine's loop (servers post into it).
// Borrows the Runtime, Executors, Fabric and Recorder.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/cluster/autoscaler.h"
#include "engine/cluster/cancellations.h"
#include "engine/cluster/cluster_counters.h"
#include "engine/cluster/cluster_options.h"
#include "engine/cluster/health_monitor.h"
#include "engine/cluster/kv_handoff.h"
#include "engine/cluster/load_migration.h"
#include "engine/cluster/pending_queue.h"
#include "engine/cluster/replica.h"
#include "engine/cluster/replica_state.h"
#include "engine/cluster/response_cache.h"
#include "engine/cluster/router.h"
#include "engine/cluster/warmup.h"
#include "engine/metrics/recorder.h"
#include "engine/sched/scheduler.h"

namespace prima::cluster {

struct ReplicaSetup {
  Executor* executor = nullptr;  // borrowed; outlives the engine
  int gpus = 1;                  // GPUs of this replica (tp * pp)
  int num_kv_blocks = 0;
  int stage_gpus = 1;  // GPUs per pipeline stage (tp): busy time per stage x this
  // Device ids per pipeline stage (for per-GPU utilization and KV transfers); may be empty.
  std::vector<std::vector<DeviceId>> devices;
  // KV offload tiers below the replica's prefix cache (null: none).
  std::shared_ptr<kv::KvTiers> kv_tiers;
  // The replica's own scheduler options (a disaggregated pool's batch limits); null: the
  // engine's.
  std::shared_ptr<const sched::SchedulerOptions> scheduler;
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

class ServingEngine final : private HealthTarget,
                            private MigrationTarget,
                            private ScalingTarget,
                            private HandoffHost,
                            private CancelHost {
 public:
  ServingEngine(Runtime* rt, EngineOptions opts, const std::vector<ReplicaSetup>& replicas,
                metrics::Recorder* recorder);
  ~ServingEngine();
  ServingEngine(const ServingEngine&) = delete;
  ServingEngine& operator=(const ServingEngine&) = delete;

  // Optional collaborators, set before start().
  void set_fabric(Fabric* f) { handoff_.set_fabric(f); }
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
  // on_token runs once per output token, the sequence's num_generated counting that token
  // (a speculative step's tokens one after another).
  std::function<void(const Sequence&)> on_token;
  std::function<void(const Sequence&)> on_end;
  // After each step that completed: the tokens it computed (prefill chunks and decodes).
  std::function<void(std::int64_t tokens)> on_step;

  // Ends every request still in the system (on replicas, in hand-off, waiting at the engine
  // for a healthy replica) as failed with `reason` (end of a run); stops periodic work. The
  // replicas are abandoned (Replica::abandon): they launch nothing more, and a step still in
  // flight is dropped when it ends.
  void fail_all(const std::string& reason);

  // Run-time replicas. add_replica: -1 when the provider has no free GPUs (or none is set).
  ReplicaId add_replica() override;
  // Stops routing to an active replica; it is removed once idle. False if not active, or
  // when it would leave fewer active replicas than HealthOptions::min_available (a
  // voluntary removal never breaks the budget).
  bool drain_replica(ReplicaId id) override;
  ReplicaState replica_state(ReplicaId id) const override { return info_[id].state; }
  ReplicaRole replica_role(ReplicaId id) const { return info_[id].role; }
  int count(ReplicaState s) const override;
  // GPUs held by replicas that are loading, active or draining.
  int gpus_held() const;
  // GPU-seconds held by replicas from construction until now (autoscaling cost).
  double provisioned_gpu_seconds() const;
  // Seconds so far with fewer active replicas than HealthOptions::min_available (0 when
  // min_available is 0); counters().below_min_available_s up to the last state change.
  double below_min_available_seconds() const;
  // Requests waiting at the engine for a healthy replica.
  std::int64_t pending() const { return pending_.size(); }
  // Utilization of each active replica since the previous call (or since it became active).
  std::vector<ReplicaLoad> sample_utilization() override;

  EngineState state() const;
  std::int64_t in_system() const override { return static_cast<std::int64_t>(live_.size()); }
  const std::vector<std::unique_ptr<Replica>>& replicas() const { return replicas_; }
  const EngineOptions& options() const { return opts_; }
  // The engine's counters, its collaborators' included (they record into this struct).
  const ClusterCounters& counters() const { return counters_; }
  const ResponseCache& response_cache() const { return cache_; }
  const Autoscaler* autoscaler() const { return autoscaler_.get(); }
  const HealthMonitor& health() const { return *health_; }
  const LoadMigrator* migrator() const { return migrator_.get(); }

 private:
  struct ReplicaInfo {
    ReplicaSetup setup;
    ReplicaState state = ReplicaState::kActive;
    ReplicaRole role = ReplicaRole::kBoth;
    double busy_s = 0;       // GPU-busy seconds / gpus, all time
    double busy_mark_s = 0;  // busy_s at the last sample
    Time mark_s = 0;         // time of the last sample (or activation)
    // Health: its work was taken out after it went down; recovering: kLoading after probes;
    // retire: it was draining when it failed (removed once its work is out).
    bool evacuated = false, recovering = false, retire = false;
  };

  ReplicaId make_replica(const ReplicaSetup& rs, ReplicaState st, ReplicaRole role);
  void activate(ReplicaId id);
  void rebuild_routing();
  void maybe_remove(ReplicaId id) override;
  void maybe_remove_later(ReplicaId id) override;  // posted when it is draining
  void note_replica_count();                       // call after any state change
  Time held_since_ = 0;
  int gpus_held_ = 0;
  static bool is_warmup(const Sequence* s) { return Warmup::is_warmup(*s); }
  void end(Sequence* s, Outcome o, std::string reason) override;
  void integrate_below_min(Time now);

  // Health checks and failover (failover.cpp).
  void on_step_health(ReplicaId id, const StepResult& r);
  void mark_down(ReplicaId id, const Status& why);
  void evacuate(ReplicaId id);
  void reroute(Sequence* s, ReplicaId from);
  Replica* pick_healthy(const Sequence& s);  // nullptr when no healthy replica can take it
  void route_or_wait(Sequence* s);
  void on_pending_timeout(Sequence* s);  // PendingQueue's timeout: fails it
  void drain_pending();
  bool recovering_anywhere() const;
  void reload(ReplicaId id);  // provider_.load, then finish_recovery or back to kUnhealthy
  void finish_recovery(ReplicaId id);

  // HealthTarget (the HealthMonitor's view).
  int num_replicas() const override { return static_cast<int>(replicas_.size()); }
  Executor* executor_of(ReplicaId id) const override { return info_[id].setup.executor; }
  bool begin_recovery(ReplicaId id) override;  // true when it is on its way back
  // MigrationTarget (the LoadMigrator's view).
  const std::vector<Replica*>& routing_pool() const override { return accepting_; }
  // HandoffHost (the KvHandoff's view).
  Sequence* live_sequence(RequestId id) override {
    auto it = live_.find(id);
    return it == live_.end() ? nullptr : it->second.get();
  }
  Replica* replica(ReplicaId id) override { return replicas_[id].get(); }
  const std::vector<std::vector<DeviceId>>& replica_devices(ReplicaId id) const override {
    return info_[id].setup.devices;
  }
  void reprefill(Sequence* s) override { route_or_wait(s); }
  void fail(Sequence* s, std::string reason) override {
    end(s, Outcome::kFailed, std::move(reason));
  }
  // CancelHost (the Cancellations' view; also live_sequence, replica, num_replicas, end).
  bool leave_pending(RequestId id) override { return pending_.remove(id); }
  bool in_handoff(RequestId id) const override { return handoff_.in_transit(id); }

  Runtime* rt_;
  EngineOptions opts_;
  metrics::Recorder* recorder_;
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
  KvHandoff handoff_;
  PendingQueue pending_;
  Warmup warmup_;
  Time below_since_ = 0;  // time of the last below-min_available integration
  bool below_min_ = false;
  ClusterCounters counters_;  // the collaborators record their fields here too
  RequestId next_id_ = 1;
  std::unordered_map<RequestId, std::unique_ptr<Sequence>> live_;
  Cancellations cancels_;
};

}  // namespace prima::cluster
