#include "engine/capacity/prune.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "engine/perf/cost_model.h"
#include "engine/workload/lengths.h"
#include "engine/workload/random.h"

namespace prima::capacity {
using config::Json;

std::vector<std::string> probe_sets(const PlanSpec& spec, double rate_rps) {
  const double drain =
      spec.rate.max_drain_s > 0 ? spec.rate.max_drain_s : 2 * spec.rate.probe_duration_s + 60;
  Json slo = Json::object();
  if (spec.slo.ttft_p99_s > 0) slo["ttft"] = spec.slo.ttft_p99_s;
  if (spec.slo.tpot_p99_s > 0) slo["tpot"] = spec.slo.tpot_p99_s;
  if (spec.slo.e2e_p99_s > 0) slo["e2e"] = spec.slo.e2e_p99_s;
  return {fmt::format("workload.arrival.rate_rps={}", Json(rate_rps).dump()),
          fmt::format("duration={}", Json(spec.rate.probe_duration_s).dump()),
          fmt::format("max_drain={}", Json(drain).dump()), "slo=" + slo.dump()};
}

Result<Json> probe_scenario_json(const PlanSpec& spec, const PlanConfig& c, double rate_rps) {
  Json j = spec.scenario;
  for (const auto& s : c.sets()) PRIMA_RETURN_IF_ERROR(scenario::apply_set(&j, s));
  for (const auto& s : probe_sets(spec, rate_rps))
    PRIMA_RETURN_IF_ERROR(scenario::apply_set(&j, s));
  return j;
}

namespace {

// Mean output tokens of the workload, from draws with a fixed seed (the clamp makes the
// closed form of a lognormal too high, which would make the bound unsafe).
double mean_output_tokens(const workload::WorkloadSpec& w) {
  workload::LengthSampler s(w.output_tokens);
  std::mt19937_64 g(12345);
  constexpr int kDraws = 20000;
  double sum = 0;
  for (int i = 0; i < kDraws; ++i) sum += s.draw(g, static_cast<std::uint64_t>(i));
  return sum / kDraws;
}

}  // namespace

double roofline_capacity_rps(const scenario::Scenario& sc) {
  if (sc.workload.arrival.type == workload::ArrivalType::kTrace)
    return std::numeric_limits<double>::infinity();
  perf::CostModel cm(sc.model, sc.quantization, sc.topology.gpu, sc.plan,
                     perf::resolve(sc.calibration, sc.topology.gpu.name).efficiency,
                     sc.memory.kv_bytes_per_element);
  if (sc.plan.tensor_parallel <= sc.topology.node.gpus) cm.set_tp_link(sc.topology.node.nvlink);
  cm.set_expert_load_skew(sc.workload.expert_load_skew);
  const int b = sc.scheduler.max_num_seqs;
  BatchShape shape;
  shape.num_seqs = b;
  shape.decode_tokens = b;
  shape.sampled = b;
  shape.attended_pairs = b;  // each token attends at least to itself
  const perf::StepCost cost = cm.step(shape);
  double slowest = 0;
  for (const auto& st : cost.stages) slowest = std::max(slowest, st.compute_s);
  if (!(slowest > 0)) return std::numeric_limits<double>::infinity();
  // Speculative decoding: at most 1 + num_tokens tokens per sequence per step (every draft
  // accepted; the plain decode step is cheaper than one that verifies): still an upper bound.
  const double per_step = 1.0 + (sc.speculative.enabled() ? sc.speculative.num_tokens : 0);
  const double tokens_per_s = sc.plan.replicas * b * per_step / slowest;
  // The first output token comes from the prefill; decode steps make the rest.
  const double decode_per_request = std::max(1.0, mean_output_tokens(sc.workload) - 1);
  return tokens_per_s / decode_per_request;
}

Screening screen_config(const PlanSpec& spec, const PlanConfig& c) {
  Screening s;
  auto prune = [&](const char* kind, std::string why) {
    s.pruned = true;
    s.kind = kind;
    s.reason = std::move(why);
    return s;
  };
  auto j = probe_scenario_json(spec, c, spec.rate.min_rps);
  if (!j.ok()) return prune("invalid", j.status().message());
  auto sc = scenario::parse_scenario(*j, spec.scenario_file, spec.scenario_dir);
  if (!sc.ok()) return prune("invalid", sc.status().message());
  const auto& dis = sc->cluster.disaggregation;
  if (dis.pools_set()) {
    // Pools of their own shape: each checked alone on its GPU type, on whole nodes of that
    // type; no roofline bound (the deployment's plan is not what runs).
    const int gpn = sc->topology.node.gpus;
    std::map<std::string, int> nodes_needed;
    for (int k = 0; k < 2; ++k) {
      const plan::ParallelPlan p = dis.pool_plan(sc->plan, k);
      const std::string& gpu = k == 0 ? dis.prefill.gpu : dis.decode.gpu;
      const char* role = k == 0 ? "prefill" : "decode";
      plan::Topology topo = sc->topology;
      if (!gpu.empty()) {
        const plan::GpuSpec* g = sc->topology.gpu_type(gpu);
        if (g == nullptr)
          return prune("invalid",
                       fmt::format("{} pool: topology {} has no {} nodes", role, topo.name, gpu));
        topo.gpu = *g;
      }
      auto fit = check_plan(sc->model, sc->quantization, topo, p, sc->memory,
                            dis.pool_batch_tokens(sc->scheduler.max_num_batched_tokens, k),
                            sc->max_model_len);
      if (!fit.ok())
        return prune("invalid", fmt::format("{} pool: {}", role, fit.status().message()));
      if (!fit->fits) return prune("memory", fmt::format("{} pool: {}", role, fit->verdict));
      nodes_needed[topo.gpu.name] += (p.gpus_per_replica() * p.replicas + gpn - 1) / gpn;
    }
    for (const auto& [gpu, need] : nodes_needed) {
      const int have = static_cast<int>(sc->topology.nodes_with(gpu).size());
      if (need > have)
        return prune("invalid", fmt::format("the pools take {} {} nodes (each pool on whole "
                                            "nodes); topology {} has {}",
                                            need, gpu, sc->topology.name, have));
    }
    s.bound_rps = std::numeric_limits<double>::infinity();
    return s;
  }
  auto placed = place(sc->plan, sc->topology);
  if (!placed.ok()) return prune("invalid", placed.status().message());
  auto fit = check_plan(sc->model, sc->quantization, sc->topology, sc->plan, sc->memory,
                        sc->scheduler.max_num_batched_tokens, sc->max_model_len);
  if (!fit.ok()) return prune("invalid", fit.status().message());
  if (!fit->fits) return prune("memory", fit->verdict);
  s.bound_rps = kRooflineSlack * roofline_capacity_rps(*sc);
  if (s.bound_rps < spec.rate.min_rps)
    return prune(
        "roofline",
        fmt::format("roofline: at most {:.3g} req/s ({:.1f}x the best-case decode "
                    "throughput), below {} {:.3g}",
                    s.bound_rps, kRooflineSlack,
                    spec.target_rps > 0 ? "the target rate" : "min_rps", spec.rate.min_rps));
  return s;
}

}  // namespace prima::capacity
