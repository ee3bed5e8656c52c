// ClusterCounters: the serving engine's counters (a report contract: its fields are the keys
// of report.json's cluster sections). The engine owns the struct; each collaborator records
// its own fields through the pointer it is given (the counters sink): HealthMonitor probes and
// probes_failed, LoadMigrator migrations, Autoscaler scale_ups and scale_downs, KvHandoff the
// handoff_* fields, Warmup the warmup_* fields; the engine the rest.
#pragma once

#include <cstdint>

namespace prima::cluster {

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

}  // namespace prima::cluster
