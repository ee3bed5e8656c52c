// ClusterOptions: the scenario's cluster-level serving policies, read from its optional
// top-level objects "router", "autoscaler", "disaggregation", "response_cache", "warmup",
// "health" and "migration".
// Every option has its default in the struct; an absent object keeps today's behaviour
// (round-robin routing, a fixed set of colocated replicas, no cache, no warm-up).
// parse_cluster_options is strict (unknown keys, bad names and negative limits are errors
// naming the JSON path). Plain values; no threads.
#pragma once

#include <cstdint>

#include "engine/cluster/router.h"
#include "engine/config/json_reader.h"
#include "engine/plan/parallel_plan.h"

namespace prima::cluster {

struct RouterOptions {
  RoutingPolicy policy = RoutingPolicy::kRoundRobin;
  std::uint64_t seed = 1;  // power_of_two's generator
  // prefix_affinity: a group stays on its replica while that replica's outstanding tokens
  // are at most the least loaded replica's plus this slack.
  std::int64_t affinity_slack_tokens = 8192;
};

// HPA-like autoscaler (seed 004). desired = ceil(active * utilization / target), unchanged
// while |utilization / target - 1| <= tolerance, clamped to [min_replicas, max_replicas].
struct AutoscalerOptions {
  bool enabled = false;
  double interval_s = 15;           // evaluation period (HPA's sync period)
  double target_utilization = 0.8;  // target of the metric below
  // What "utilization" means. kGpuUtilization: the replicas' GPU busy time over the interval
  // (nvidia-smi's GPU-Util, what seed 004's HPA scales on). Under continuous batching a GPU is
  // busy whenever any sequence runs, so this saturates at light load. kConcurrency: sequences
  // running and waiting per replica / max_num_seqs, sampled at each evaluation (Knative/KServe
  // style), which follows the load.
  enum class Metric { kGpuUtilization, kConcurrency };
  Metric metric = Metric::kGpuUtilization;
  int min_replicas = 4;
  int max_replicas = 32;
  double tolerance = 0.1;
  // Scale-down: the highest desired count of this window is used (HPA's stabilization); the
  // least utilized replicas are drained first. Replicas below scale_down_utilization over the
  // last interval are idle; with scale_down_idle_only, only idle replicas are drained (then
  // replicas sharing a moderate load evenly are never removed).
  double scale_down_stabilization_s = 300;
  double scale_down_utilization = 0.1;
  bool scale_down_idle_only = false;
  // Fixed part of the scale-up delay (scheduling, process start), before weights load.
  double startup_s = 0;
};

// Disaggregated prefill/decode pools; both 0 = colocated (off).
struct DisaggregationOptions {
  int prefill_replicas = 0;
  int decode_replicas = 0;
  int max_transfer_retries = 2;  // a failed KV hand-off is retried on another decode replica
  // A pool's own layout and batch limits (0: the deployment's and scheduler's). With either
  // pool set, the prefill pool's replicas come first on the GPUs and the decode pool's start
  // on the next node.
  struct Pool {
    int tensor_parallel = 0, pipeline_parallel = 0;
    int max_num_seqs = 0, max_num_batched_tokens = 0;
    std::string gpu;  // the pool's GPU type ("": the topology's); its nodes: node_gpus
    bool set() const {
      return tensor_parallel > 0 || pipeline_parallel > 0 || max_num_seqs > 0 ||
             max_num_batched_tokens > 0 || !gpu.empty();
    }
  };
  Pool prefill, decode;
  bool pools_set() const { return prefill.set() || decode.set(); }
  // Pool k's plan (0: prefill, 1: decode): the deployment's with the pool's TP, PP and
  // replica count.
  plan::ParallelPlan pool_plan(const plan::ParallelPlan& deployment, int k) const {
    const Pool& o = k == 0 ? prefill : decode;
    plan::ParallelPlan p = deployment;
    if (o.tensor_parallel > 0) p.tensor_parallel = o.tensor_parallel;
    if (o.pipeline_parallel > 0) p.pipeline_parallel = o.pipeline_parallel;
    p.replicas = k == 0 ? prefill_replicas : decode_replicas;
    return p;
  }
  // Pool k's largest batch in tokens (its own limit, else the scheduler's).
  int pool_batch_tokens(int scheduler_tokens, int k) const {
    const Pool& o = k == 0 ? prefill : decode;
    return o.max_num_batched_tokens > 0 ? o.max_num_batched_tokens : scheduler_tokens;
  }
  bool enabled() const { return prefill_replicas > 0 || decode_replicas > 0; }
};

// Response cache for short, repeated prompts (seed 001). In simulation a prompt's identity
// is (prefix_group, prompt_tokens), and only requests whose whole prompt is shared
// (prefix_tokens == prompt_tokens, prefix_group != 0) can be cached.
struct ResponseCacheOptions {
  bool enabled = false;
  int max_prompt_tokens = 128;
  int capacity = 10000;  // entries (LRU)
  double ttl_s = 300;    // 0 = entries never expire
  double hit_latency_s = 0.001;
};

// Warm-up requests sent to every replica at start, before the workload (seed 001).
struct WarmupOptions {
  int requests = 0;  // per replica; 0 = off
  int prompt_tokens = 16;
  int output_tokens = 1;
};

// Health checks and failover (seed 001's PodDisruptionBudget, seed 000's incidents). On by
// default: they only act when a step, transfer or probe fails, so fault-free runs are
// unchanged. A replica whose steps fail `failures_to_mark_down` times in a row is taken out
// of routing (state kUnhealthy); its requests are re-routed to healthy replicas and
// re-prefilled there (a request re-routed more than max_request_retries times fails with the
// reason). Unhealthy replicas are probed every probe_interval_s (Executor::check_health; a
// probe not answered within probe_timeout_s fails); after probes_to_mark_up good probes the
// replica reloads its weights (when reload_weights and a provider can load) and serves again.
// Requests that find no healthy replica wait at the engine (bounded by pending_timeout_s).
struct HealthOptions {
  bool enabled = true;
  int failures_to_mark_down = 1;
  double probe_interval_s = 5;
  double probe_timeout_s = 2;
  int probes_to_mark_up = 1;
  bool reload_weights = true;
  // With reload_weights: the worker's restart (process, NCCL communicators) before the reload.
  double restart_s = 30;
  int max_request_retries = 3;
  double pending_timeout_s = 300;  // a request waiting for any healthy replica, then fails
  // PodDisruptionBudget minAvailable: voluntary removals (autoscaler scale-down, migration
  // drains) never leave fewer healthy active replicas; the report counts the seconds spent
  // below it because of failures. 0 = no budget.
  int min_available = 0;
};

// Dynamic load migration (seed 000: "enable prima's dynamic load migration" for hot nodes).
// Every interval_s each replica's expected wait is estimated from its queue and its measured
// speed (tokens per second over the last interval); waiting sequences (not yet started, or
// preempted) move from replicas whose expected wait exceeds imbalance_ratio x the median to
// the replicas with the shortest, and routing weighs replicas by measured speed.
struct MigrationOptions {
  bool enabled = false;
  double interval_s = 1.0;
  double imbalance_ratio = 1.5;
  int max_moves_per_interval = 64;
};

struct ClusterOptions {
  RouterOptions router;
  HealthOptions health;        // "health"
  MigrationOptions migration;  // "migration"
  AutoscalerOptions autoscaler;
  DisaggregationOptions disaggregation;
  ResponseCacheOptions response_cache;
  WarmupOptions warmup;
};

// Reads the optional objects named above from the scenario's root object (marks them read;
// other keys of the root are left to the caller). Throws config::ConfigError on bad input.
void parse_cluster_options(const config::JsonReader& scenario_root, ClusterOptions* o);

}  // namespace prima::cluster
