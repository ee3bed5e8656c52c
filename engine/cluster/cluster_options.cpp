#include "engine/cluster/cluster_options.h"

namespace prima::cluster {
namespace {

int count(const config::JsonReader& r, const std::string& key, int def) {
  std::int64_t v = r.non_negative_integer(key, def);
  if (v > 1000000) r.fail(key, "expected at most 1000000, got " + std::to_string(v));
  return static_cast<int>(v);
}

void parse_router(const config::JsonReader& r, RouterOptions* o) {
  std::string p = r.one_of("policy", routing_policy_names(), "round_robin");
  parse_routing_policy(p, &o->policy);
  o->seed = static_cast<std::uint64_t>(r.non_negative_integer("seed", std::int64_t(o->seed)));
  o->affinity_slack_tokens =
      r.non_negative_integer("affinity_slack_tokens", o->affinity_slack_tokens);
  r.finish();
}

void parse_autoscaler(const config::JsonReader& r, AutoscalerOptions* o) {
  o->enabled = r.boolean("enabled", true);
  o->interval_s = r.duration_s("interval", o->interval_s);
  if (o->interval_s <= 0) r.fail("interval", "expected a duration > 0");
  o->target_utilization = r.fraction("target_utilization", o->target_utilization);
  if (o->target_utilization <= 0) r.fail("target_utilization", "expected a number in (0, 1]");
  const std::string metric =
      r.one_of("metric", {"gpu_utilization", "concurrency"}, "gpu_utilization");
  o->metric = metric == "concurrency" ? AutoscalerOptions::Metric::kConcurrency
                                      : AutoscalerOptions::Metric::kGpuUtilization;
  o->min_replicas = static_cast<int>(r.positive_integer("min_replicas", o->min_replicas));
  o->max_replicas = static_cast<int>(r.positive_integer("max_replicas", o->max_replicas));
  if (o->max_replicas < o->min_replicas)
    r.fail("max_replicas", "expected >= min_replicas (" + std::to_string(o->min_replicas) +
                               "), got " + std::to_string(o->max_replicas));
  o->tolerance = r.fraction("tolerance", o->tolerance);
  o->scale_down_stabilization_s =
      r.duration_s("scale_down_stabilization", o->scale_down_stabilization_s);
  if (o->scale_down_stabilization_s < 0)
    r.fail("scale_down_stabilization", "expected a duration >= 0");
  o->scale_down_utilization = r.fraction("scale_down_utilization", o->scale_down_utilization);
  o->scale_down_idle_only = r.boolean("scale_down_idle_only", o->scale_down_idle_only);
  o->startup_s = r.duration_s("startup", o->startup_s);
  if (o->startup_s < 0) r.fail("startup", "expected a duration >= 0");
  r.finish();
}

void parse_disaggregation(const config::JsonReader& r, DisaggregationOptions* o) {
  o->prefill_replicas = static_cast<int>(r.positive_integer("prefill_replicas"));
  o->decode_replicas = static_cast<int>(r.positive_integer("decode_replicas"));
  o->max_transfer_retries = count(r, "max_transfer_retries", o->max_transfer_retries);
  auto pool = [&](const char* key, DisaggregationOptions::Pool* p) {
    auto po = r.optional_object(key);
    if (!po) return;
    p->tensor_parallel = static_cast<int>(po->positive_integer("tensor_parallel", 0));
    p->pipeline_parallel = static_cast<int>(po->positive_integer("pipeline_parallel", 0));
    p->max_num_seqs = static_cast<int>(po->positive_integer("max_num_seqs", 0));
    p->max_num_batched_tokens = static_cast<int>(po->positive_integer("max_num_batched_tokens", 0));
    p->gpu = po->string("gpu", "");
    po->finish();
  };
  pool("prefill", &o->prefill);
  pool("decode", &o->decode);
  r.finish();
}

void parse_response_cache(const config::JsonReader& r, ResponseCacheOptions* o) {
  o->enabled = r.boolean("enabled", true);
  o->max_prompt_tokens =
      static_cast<int>(r.positive_integer("max_prompt_tokens", o->max_prompt_tokens));
  o->capacity = static_cast<int>(r.positive_integer("capacity", o->capacity));
  o->ttl_s = r.duration_s("ttl", o->ttl_s);
  if (o->ttl_s < 0) r.fail("ttl", "expected a duration >= 0 (0: never expires)");
  o->hit_latency_s = r.duration_s("hit_latency", o->hit_latency_s);
  if (o->hit_latency_s < 0) r.fail("hit_latency", "expected a duration >= 0");
  r.finish();
}

void parse_warmup(const config::JsonReader& r, WarmupOptions* o) {
  o->requests = count(r, "requests", 16);
  o->prompt_tokens = static_cast<int>(r.positive_integer("prompt_tokens", o->prompt_tokens));
  o->output_tokens = static_cast<int>(r.positive_integer("output_tokens", o->output_tokens));
  r.finish();
}

void parse_health(const config::JsonReader& r, HealthOptions* o) {
  auto positive_duration = [&](const char* key, double def) {
    double v = r.duration_s(key, def);
    if (v <= 0) r.fail(key, "expected a duration > 0");
    return v;
  };
  o->enabled = r.boolean("enabled", o->enabled);
  o->failures_to_mark_down =
      static_cast<int>(r.positive_integer("failures_to_mark_down", o->failures_to_mark_down));
  o->probe_interval_s = positive_duration("probe_interval", o->probe_interval_s);
  o->probe_timeout_s = positive_duration("probe_timeout", o->probe_timeout_s);
  o->probes_to_mark_up =
      static_cast<int>(r.positive_integer("probes_to_mark_up", o->probes_to_mark_up));
  o->reload_weights = r.boolean("reload_weights", o->reload_weights);
  o->restart_s = r.duration_s("restart", o->restart_s);
  if (o->restart_s < 0) r.fail("restart", "expected a duration >= 0");
  o->max_request_retries = count(r, "max_request_retries", o->max_request_retries);
  o->pending_timeout_s = positive_duration("pending_timeout", o->pending_timeout_s);
  o->min_available = count(r, "min_available", o->min_available);
  r.finish();
}

void parse_migration(const config::JsonReader& r, MigrationOptions* o) {
  o->enabled = r.boolean("enabled", true);
  o->interval_s = r.duration_s("interval", o->interval_s);
  if (o->interval_s <= 0) r.fail("interval", "expected a duration > 0");
  o->imbalance_ratio = r.number("imbalance_ratio", o->imbalance_ratio);
  if (o->imbalance_ratio < 1) r.fail("imbalance_ratio", "expected a number >= 1");
  o->max_moves_per_interval =
      static_cast<int>(r.positive_integer("max_moves_per_interval", o->max_moves_per_interval));
  r.finish();
}

}  // namespace

void parse_cluster_options(const config::JsonReader& root, ClusterOptions* o) {
  if (auto r = root.optional_object("router")) parse_router(*r, &o->router);
  if (auto r = root.optional_object("autoscaler")) parse_autoscaler(*r, &o->autoscaler);
  if (auto r = root.optional_object("disaggregation")) parse_disaggregation(*r, &o->disaggregation);
  if (auto r = root.optional_object("response_cache")) parse_response_cache(*r, &o->response_cache);
  if (auto r = root.optional_object("warmup")) parse_warmup(*r, &o->warmup);
  if (auto r = root.optional_object("health")) parse_health(*r, &o->health);
  if (auto r = root.optional_object("migration")) parse_migration(*r, &o->migration);
  if (o->autoscaler.enabled && o->disaggregation.enabled())
    root.fail("autoscaler", "cannot be combined with \"disaggregation\" (fixed pools)");
}

}  // namespace prima::cluster
