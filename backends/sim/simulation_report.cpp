// The report of a finished simulation (see simulation_report.h): the metrics recorder's report
// plus the sections that describe the scenario's deployment, its KV cache and tiers, the
// scheduler's counters and the cluster policies that were on.
#include "backends/sim/simulation_report.h"

#include <algorithm>

#include "engine/cluster/cluster_options.h"
#include "engine/metrics/incidents.h"
#include "engine/metrics/report.h"
#include "engine/perf/calibration.h"
#include "engine/perf/engine_profile.h"

namespace prima::sim {
namespace {

using OJson = nlohmann::ordered_json;

double gb(double bytes) {
  return bytes / 1e9;
}

// KV offload tiers: per tier (a shared tier once), blocks and GB written, read back (hits),
// removed and held at the end; written - removed = stored holds tier by tier.
OJson kv_tier_section(const cluster::ServingEngine& eng) {
  struct Sum {
    const kv::KvTierSpec* spec = nullptr;  // the first instance's
    int instances = 0;
    std::int64_t capacity = 0;
    kv::KvTierStats stats;
    double written_bytes = 0, read_bytes = 0;
  };
  std::vector<const kv::KvTier*> seen;
  std::vector<Sum> by_index;
  std::int64_t tier_hit_tokens = 0;
  for (const auto& r : eng.replicas()) {
    tier_hit_tokens += r->kv().tier_hit_tokens();
    const kv::KvTiers* t = r->kv().tiers();
    if (t == nullptr) continue;
    for (std::size_t i = 0; i < t->tiers().size(); ++i) {
      const kv::KvTier* tier = t->tiers()[i].get();
      if (std::find(seen.begin(), seen.end(), tier) != seen.end()) continue;  // shared
      seen.push_back(tier);
      if (by_index.size() <= i) by_index.resize(i + 1);
      Sum& u = by_index[i];
      const kv::KvTierStats& s = tier->stats();
      if (!u.spec) u.spec = &tier->spec();
      ++u.instances;
      u.capacity += tier->spec().capacity_blocks;
      u.stats.written += s.written;
      u.stats.read += s.read;
      u.stats.late += s.late;
      u.stats.removed += s.removed;
      u.stats.stored += s.stored;
      u.written_bytes += s.written * tier->spec().bytes_per_block;
      u.read_bytes += s.read * tier->spec().bytes_per_block;
    }
  }
  OJson tiers = OJson::array();
  for (const Sum& u : by_index)
    tiers.push_back(OJson{{"tier", u.spec->name},
                          {"instances", u.instances},
                          {"capacity_blocks", u.capacity},
                          {"read_s_per_block", u.spec->seconds_per_block},
                          {"write_s_per_block", u.spec->write_seconds_per_block},
                          {"written_blocks", u.stats.written},
                          {"read_blocks", u.stats.read},
                          {"late_blocks", u.stats.late},
                          {"removed_blocks", u.stats.removed},
                          {"stored_blocks", u.stats.stored},
                          {"written_gb", u.written_bytes / 1e9},
                          {"read_gb", u.read_bytes / 1e9}});
  return OJson{{"hit_tokens", tier_hit_tokens}, {"tiers", std::move(tiers)}};
}

OJson extra_sections(const scenario::Scenario& sc, const plan::MemoryFit& fit, int kv_blocks,
                     const std::vector<SimCluster::Pool>& pools, const cluster::ServingEngine& eng,
                     double kv_usage_mean, double fragmentation_mean) {
  OJson j;
  j["model"] = OJson{{"name", sc.model.name},
                     {"quantization", model::quantization_name(sc.quantization)},
                     {"params_b", sc.model.total_params() / 1e9}};
  j["topology"] = OJson{{"name", sc.topology.name},
                        {"nodes", sc.topology.nodes},
                        {"gpus_per_node", sc.topology.node.gpus},
                        {"gpu", sc.topology.gpu.name}};
  j["deployment"] = OJson{{"tensor_parallel", sc.plan.tensor_parallel},
                          {"pipeline_parallel", sc.plan.pipeline_parallel},
                          {"micro_batch", sc.plan.micro_batch},
                          {"replicas", sc.plan.replicas}};
  // The batch limits a replica runs under, and the most sequences it keeps running at once:
  // max_num_seqs, or micro-batch x stages when pipeline micro-batches cap each step.
  const int running_cap =
      sc.plan.micro_batch > 0 && sc.plan.pipeline_parallel > 1
          ? std::min(sc.scheduler.max_num_seqs, sc.plan.micro_batch * sc.plan.pipeline_parallel)
          : sc.scheduler.max_num_seqs;
  j["deployment"]["max_num_seqs"] = sc.scheduler.max_num_seqs;
  j["deployment"]["max_num_batched_tokens"] = sc.scheduler.max_num_batched_tokens;
  j["deployment"]["max_running_per_replica"] = running_cap;
  if (sc.plan.placement == plan::Placement::kStageMajor)
    j["deployment"]["placement"] = "stage_major";  // packed (the default) is not written
  // Disaggregated pools with their own layout and batch limits.
  if (!pools.empty()) {
    OJson arr = OJson::array();
    for (const auto& p : pools)
      arr.push_back(
          OJson{{"role", p.role},
                {"gpu", p.gpu.name},
                {"replicas", p.plan.replicas},
                {"tensor_parallel", p.plan.tensor_parallel},
                {"pipeline_parallel", p.plan.pipeline_parallel},
                {"gpus", p.plan.gpus_per_replica() * p.plan.replicas},
                {"max_num_seqs", p.scheduler->max_num_seqs},
                {"max_num_batched_tokens", p.scheduler->max_num_batched_tokens},
                {"kv_tokens_per_replica", std::int64_t(p.kv_blocks) * sc.scheduler.block_size},
                {"weights_gb_per_gpu", p.fit.weight_bytes / 1e9}});
    j["deployment"]["pools"] = std::move(arr);
  }
  // MoE layouts and context parallelism: written when used.
  if (sc.plan.data_parallel > 1) j["deployment"]["data_parallel"] = sc.plan.data_parallel;
  if (sc.plan.context_parallel > 1) j["deployment"]["context_parallel"] = sc.plan.context_parallel;
  if (sc.plan.expert_parallel > 1) {
    j["deployment"]["expert_parallel"] = sc.plan.expert_parallel;
    j["deployment"]["expert_tensor_parallel"] = sc.plan.expert_tensor_parallel();
    j["deployment"]["expert_load_skew"] = sc.workload.expert_load_skew;
  }
  int peak_blocks = 0;
  double usage_peak = 0;
  for (const auto& r : eng.replicas()) {
    peak_blocks = std::max(peak_blocks, r->kv().peak_used_blocks());
    usage_peak = std::max(usage_peak,
                          double(r->kv().peak_used_blocks()) / std::max(1, r->kv().num_blocks()));
  }
  j["kv_cache"] = OJson{{"block_size", sc.scheduler.block_size},
                        {"blocks_per_replica", kv_blocks},
                        {"tokens_per_replica", std::int64_t(kv_blocks) * sc.scheduler.block_size},
                        {"peak_used_blocks", peak_blocks},
                        {"peak_usage", usage_peak}};
  // Prefix cache, KV memory and scheduler counters, summed over replicas.
  std::int64_t lookups = 0, hits = 0, hit_tokens = 0, lookup_tokens = 0, evictions = 0,
               compactions = 0, swap_outs = 0, swap_ins = 0, prio_preempt = 0, batches = 0;
  for (const auto& r : eng.replicas()) {
    const auto& kv = r->kv();
    lookups += kv.prefix_lookups();
    hits += kv.prefix_hits();
    hit_tokens += kv.prefix_hit_tokens();
    lookup_tokens += kv.prefix_lookup_tokens();
    evictions += kv.evictions();
    compactions += kv.compactions();
    const auto& sch = r->scheduler();
    swap_outs += sch.swap_outs();
    swap_ins += sch.swap_ins();
    prio_preempt += sch.priority_preemptions();
    batches += sch.batches_formed();
  }
  j["kv_cache"]["usage_mean"] = kv_usage_mean;
  j["kv_cache"]["internal_fragmentation_mean"] = fragmentation_mean;
  j["kv_cache"]["compactions"] = compactions;
  j["prefix_cache"] =
      OJson{{"enabled", sc.scheduler.enable_prefix_caching},
            {"lookups", lookups},
            {"hits", hits},
            {"hit_tokens", hit_tokens},
            {"hit_rate", lookup_tokens > 0 ? double(hit_tokens) / lookup_tokens : 0.0},
            {"evictions", evictions}};
  if (!sc.kv_tiers.empty()) j["kv_tiers"] = kv_tier_section(eng);
  j["scheduler"] = OJson{{"priority_preemptions", prio_preempt},
                         {"swap_outs", swap_outs},
                         {"swap_ins", swap_ins},
                         {"batches_formed", batches}};
  j["memory_per_gpu_gb"] = OJson{{"hbm", gb(fit.hbm_bytes)},
                                 {"usable", gb(fit.usable_bytes)},
                                 {"weights", gb(fit.weight_bytes)},
                                 {"activations", gb(fit.activation_bytes)},
                                 {"kv_cache", gb(fit.kv_bytes)}};
  return j;
}

// Report sections of the cluster policies that are on (none by default).
void cluster_sections(const cluster::ClusterOptions& co, const cluster::ServingEngine& eng,
                      const metrics::Recorder& rec, int max_capped_from, OJson* j) {
  const auto& c = eng.counters();
  if (co.autoscaler.enabled) {
    OJson a{
        {"scale_ups", c.scale_ups},
        {"scale_downs", c.scale_downs},
        {"replicas_min_seen", c.replicas_min_seen},
        {"replicas_max_seen", c.replicas_max_seen},
        {"load_failures", c.load_failures},
        {"gpu_seconds_provisioned", eng.provisioned_gpu_seconds()},
        {"utilization_of_provisioned", eng.provisioned_gpu_seconds() > 0
                                           ? rec.busy_gpu_seconds() / eng.provisioned_gpu_seconds()
                                           : 0.0},
        {"min_replicas", co.autoscaler.min_replicas},
        {"max_replicas", co.autoscaler.max_replicas}};
    if (max_capped_from > 0) a["max_replicas_requested"] = max_capped_from;
    (*j)["autoscaler"] = a;
  }
  if (co.disaggregation.enabled())
    (*j)["disaggregation"] = OJson{{"prefill_replicas", co.disaggregation.prefill_replicas},
                                   {"decode_replicas", co.disaggregation.decode_replicas},
                                   {"handoffs", c.handoffs},
                                   {"handoff_retries", c.handoff_retries},
                                   {"handoff_failures", c.handoff_failures},
                                   {"handoff_gb", gb(c.handoff_bytes)}};
  if (co.response_cache.enabled) {
    const auto& rc = eng.response_cache();
    (*j)["response_cache"] =
        OJson{{"lookups", rc.lookups()},
              {"hits", rc.hits()},
              {"hit_rate", rc.lookups() > 0 ? double(rc.hits()) / double(rc.lookups()) : 0.0}};
  }
  if (co.warmup.requests > 0)
    (*j)["warmup"] = OJson{{"requests", c.warmup_requests}, {"completed", c.warmup_completed}};
}

// Health checks and failover: what the engine did about failures (always present).
OJson failover_section(const cluster::ClusterOptions& co, const cluster::ServingEngine& eng) {
  const auto& c = eng.counters();
  OJson f{{"health_checks", co.health.enabled},
          {"step_failures", c.step_failures},
          {"replica_failures", c.replica_failures},
          {"replica_recoveries", c.replica_recoveries},
          {"probes", c.probes},
          {"probes_failed", c.probes_failed},
          {"reroutes", c.reroutes},
          {"retries_exhausted", c.retries_exhausted},
          {"migrations", c.migrations}};
  if (co.health.min_available > 0) {
    f["min_available"] = co.health.min_available;
    f["below_min_available_s"] = eng.below_min_available_seconds();
  }
  return f;
}

std::vector<metrics::FaultWindow> fault_windows(const scenario::Scenario& sc) {
  std::vector<metrics::FaultWindow> w;
  for (std::size_t i = 0; i < sc.faults.size(); ++i) {
    const auto& f = sc.faults[i];
    w.push_back({f.label(static_cast<int>(i)), faults::fault_type_name(f.type), f.target.describe(),
                 f.start_s, f.end_s});
  }
  return w;
}

// Each pool's mean busy fraction (its GPUs' busy seconds over its GPU-seconds), for the
// planner's power model of pools on two GPU types.
void pool_utilization(const SimCluster& cl, double simulated_s, OJson* report) {
  const auto& busy = cl.recorder->device_busy_seconds();
  const double T = simulated_s > 0 ? simulated_s : 1;
  auto& pools = (*report)["deployment"]["pools"];
  for (std::size_t k = 0; k < cl.pools.size() && k < pools.size(); ++k) {
    double b = 0;
    int n = 0;
    for (std::size_t i = 0; i < cl.placements.size(); ++i) {
      if (cl.pool_of[i] != static_cast<int>(k)) continue;
      for (const auto& stage : cl.placements[i].devices)
        for (DeviceId d : stage) {
          b += static_cast<std::size_t>(d) < busy.size() ? busy[d] : 0.0;
          ++n;
        }
    }
    pools[k]["utilization_mean"] = n > 0 ? b / (n * T) : 0.0;
  }
}

// What the run was asked to serve, for the reports' verdicts: the scenario's description, the
// arrival window and its workload section as written (after --set overrides).
OJson workload_section(const scenario::Scenario& sc) {
  OJson w{{"duration_s", sc.duration_s}};
  const auto& r = sc.resolved;
  if (r.contains("description") && r["description"].is_string())
    w["description"] = r["description"].get<std::string>();
  if (r.contains("workload") && r["workload"].is_object())
    w["spec"] = OJson::parse(r["workload"].dump());
  return w;
}

// slo.target: the share of requests that must meet the bounds (the scenario's slo.attainment,
// else 0.99 as `prima plan` assumes) and where it came from.
void slo_target(const scenario::Scenario& sc, OJson* report) {
  const bool given = sc.slo.attainment > 0;
  (*report)["slo"]["target"] = given ? sc.slo.attainment : 0.99;
  (*report)["slo"]["target_source"] = given ? "scenario" : "default";
}

}  // namespace

OJson build_simulation_report(const scenario::Scenario& sc, const SimCluster& cl,
                              const RunTotals& t) {
  const cluster::ServingEngine& engine = *cl.engine;
  const metrics::Recorder& rec = *cl.recorder;
  metrics::ReportInputs in;
  in.scenario = sc.name;
  in.seed = sc.seed;
  in.simulated_seconds = t.simulated_s;
  in.slo = {sc.slo.ttft_s, sc.slo.tpot_s, sc.slo.e2e_s};
  in.gpus = rec.gpus();
  in.gpu_hbm_bytes = sc.topology.gpu.hbm_bytes;
  in.wall_seconds = t.wall_s;
  const perf::RunFacts facts = scenario::run_facts(sc);
  in.fidelity = OJson::parse(perf::trust_json(perf::resolve(sc.calibration, sc.topology.gpu.name),
                                              sc.topology.gpu.name, &facts)
                                 .dump());
  in.extra = extra_sections(sc, cl.fit, cl.kv_blocks, cl.pools, engine, t.kv_usage_mean,
                            t.fragmentation_mean);
  cluster_sections(cl.copts, engine, rec, cl.max_capped_from, &in.extra);
  in.extra["workload"] = workload_section(sc);
  // The fault timeline as written, so a comparison of two runs can say how their faults differ.
  if (sc.resolved.contains("faults") && sc.resolved["faults"].is_array())
    in.extra["faults"] = OJson::parse(sc.resolved["faults"].dump());
  in.extra["failover"] = failover_section(cl.copts, engine);
  if (!cl.load_errors.empty()) in.extra["load_errors"] = cl.load_errors;
  in.extra["incidents"] = metrics::incidents_json(rec, fault_windows(sc), t.simulated_s);
  std::vector<plan::ReplicaPlacement> placements = cl.placements;
  if (cl.copts.autoscaler.enabled) {
    placements = cl.pool;  // every GPU a replica may have used
    in.gpus = static_cast<int>(cl.pool.size()) * sc.plan.gpus_per_replica();
  }
  for (const auto& pl : placements)
    for (std::size_t s = 0; s < pl.devices.size(); ++s)
      for (DeviceId d : pl.devices[s])
        in.gpu_labels.push_back({d, sc.topology.node_of(d), pl.replica, static_cast<int>(s)});
  OJson report = metrics::build_report(rec, in);
  if (!cl.pools.empty()) pool_utilization(cl, t.simulated_s, &report);
  slo_target(sc, &report);
  return report;
}

}  // namespace prima::sim
