#include "engine/capacity/search_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <tuple>

#include "engine/plan/topology.h"

namespace prima::capacity {
using config::Json;

namespace {

// FNV-1a: a stable short tag for inline topology objects.
std::string short_hash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:08x}", static_cast<std::uint32_t>(h ^ (h >> 32)));
}

// The topology entry with its GPU replaced by `gpu` (a name), as a scenario accepts it.
Json with_gpu(const Json& entry, const std::string& gpu) {
  if (entry.is_string()) return Json{{"base", entry}, {"gpu", gpu}};
  Json e = entry;
  e["gpu"] = gpu;
  return e;
}

// "bitbrick_k1" for a name; "bitbrick_k1{nodes=4}" for a short patch of a base; otherwise
// the topology's name and a hash of its object.
std::string topology_label(const Json& entry, const std::string& resolved_name) {
  if (entry.is_string()) return entry.get<std::string>();
  if (entry.contains("base") && entry["base"].is_string()) {
    std::string patch;
    for (const auto& [k, v] : entry.items())
      if (k != "base") patch += (patch.empty() ? "" : ",") + k + "=" + v.dump();
    if (patch.size() <= 32 && patch.find('"') == std::string::npos)
      return entry["base"].get<std::string>() + "{" + patch + "}";
  }
  return resolved_name + "#" + short_hash(entry.dump());
}

}  // namespace

std::string speculative_label(const Json& s) {
  if (!s.is_object()) return "nospec";
  const std::string method = s.value("method", std::string("?"));
  std::string who = method;
  if (method == "draft" && s.contains("draft_model"))
    who += "(" +
           (s["draft_model"].is_string() ? s["draft_model"].get<std::string>()
                                         : s["draft_model"].value("name", std::string("model"))) +
           ")";
  return fmt::format("spec-{}{}@{:g}", who, s.value("num_tokens", 0),
                     s.value("acceptance_rate", 0.0));
}

std::vector<std::pair<std::string, int>> PlanConfig::gpu_counts() const {
  if (!pools()) return {{gpu, gpus()}};
  const std::string& pg = prefill_gpu.empty() ? gpu : prefill_gpu;
  const std::string& dg = decode_gpu.empty() ? gpu : decode_gpu;
  if (pg == dg) return {{pg, gpus()}};
  return {{pg, prefill_gpus()}, {dg, decode_gpus()}};
}

std::string PlanConfig::key() const {
  std::string k =
      fmt::format("{} {} tp{} pp{}", topology_label, gpu, tensor_parallel, pipeline_parallel);
  if (moe_set) {
    if (data_parallel > 1) k += fmt::format(" dp{}", data_parallel);
    k += expert_parallel ? fmt::format(" ep{}", expert_groups()) : " noep";
    if (expert_parallel && expert_tp > 1) k += fmt::format(" etp{}", expert_tp);
  }
  if (context_parallel > 0) k += fmt::format(" cp{}", context_parallel);
  k += fmt::format(" x{}", replicas);
  if (!quantization.empty()) k += " " + quantization;
  if (max_num_seqs > 0) k += fmt::format(" seqs{}", max_num_seqs);
  if (max_num_batched_tokens > 0) k += fmt::format(" tok{}", max_num_batched_tokens);
  if (priority_scheduling >= 0) k += priority_scheduling ? " prio" : " fifo";
  if (disaggregation) k += " disagg";
  auto at = [](const std::string& g) { return g.empty() ? std::string() : "@" + g; };
  if (pools())
    k += fmt::format(" p{}xtp{}{} d{}xtp{}{}", prefill_replicas(), prefill_tp, at(prefill_gpu),
                     decode_replicas(), decode_tp, at(decode_gpu));
  if (speculative_set) k += " " + speculative_label(speculative);
  return k;
}

std::vector<std::string> PlanConfig::sets() const {
  std::vector<std::string> s;
  s.push_back("topology=" + (topology.is_string() ? topology.get<std::string>() : topology.dump()));
  if (!quantization.empty()) s.push_back("quantization=" + quantization);
  s.push_back(fmt::format("deployment.parallel_strategy.tensor_parallel={}", tensor_parallel));
  s.push_back(fmt::format("deployment.parallel_strategy.pipeline_parallel={}", pipeline_parallel));
  if (moe_set) {
    s.push_back(fmt::format("deployment.parallel_strategy.data_parallel={}", data_parallel));
    s.push_back(fmt::format("deployment.parallel_strategy.expert_parallel={}",
                            expert_parallel ? expert_groups() : 1));
  }
  if (context_parallel > 0)
    s.push_back(fmt::format("deployment.parallel_strategy.context_parallel={}", context_parallel));
  s.push_back(fmt::format("deployment.replicas={}", replicas));
  if (max_num_seqs > 0) s.push_back(fmt::format("scheduler.max_num_seqs={}", max_num_seqs));
  if (max_num_batched_tokens > 0)
    s.push_back(fmt::format("scheduler.max_num_batched_tokens={}", max_num_batched_tokens));
  if (priority_scheduling >= 0)
    s.push_back(std::string("scheduler.priority_scheduling=") +
                (priority_scheduling ? "true" : "false"));
  if (pools()) {
    using OJson = nlohmann::ordered_json;
    OJson pool_p = {{"tensor_parallel", prefill_tp}}, pool_d = {{"tensor_parallel", decode_tp}};
    if (!prefill_gpu.empty()) pool_p["gpu"] = prefill_gpu;
    if (!decode_gpu.empty()) pool_d["gpu"] = decode_gpu;
    s.push_back("disaggregation=" + OJson{{"prefill_replicas", prefill_replicas()},
                                          {"decode_replicas", decode_replicas()},
                                          {"prefill", pool_p},
                                          {"decode", pool_d}}
                                        .dump());
  } else if (disaggregation)
    s.push_back(fmt::format(R"(disaggregation={{"prefill_replicas":{},"decode_replicas":{}}})",
                            prefill_replicas(), decode_replicas()));
  else
    s.push_back("disaggregation=null");
  if (speculative_set) s.push_back("speculative=" + speculative.dump());
  return s;
}

Json PlanConfig::to_json() const {
  Json j = {{"topology", topology_label},
            {"gpu", gpu},
            {"gpus", gpus()},
            {"tensor_parallel", tensor_parallel},
            {"pipeline_parallel", pipeline_parallel},
            {"replicas", replicas}};
  if (moe_set) {
    j["data_parallel"] = data_parallel;
    j["expert_parallel"] = expert_parallel ? expert_groups() : 1;
    if (expert_parallel && expert_tp > 1) j["expert_tensor_parallel"] = expert_tp;
  }
  if (context_parallel > 0) j["context_parallel"] = context_parallel;
  if (!quantization.empty()) j["quantization"] = quantization;
  if (max_num_seqs > 0) j["max_num_seqs"] = max_num_seqs;
  if (max_num_batched_tokens > 0) j["max_num_batched_tokens"] = max_num_batched_tokens;
  if (priority_scheduling >= 0) j["priority_scheduling"] = priority_scheduling == 1;
  j["disaggregation"] = disaggregation;
  if (pools()) {
    j["prefill"] = {{"replicas", prefill_replicas()}, {"tensor_parallel", prefill_tp}};
    j["decode"] = {{"replicas", decode_replicas()}, {"tensor_parallel", decode_tp}};
    if (!prefill_gpu.empty()) j["prefill"]["gpu"] = prefill_gpu;
    if (!decode_gpu.empty()) j["decode"]["gpu"] = decode_gpu;
  }
  if (speculative_set) j["speculative"] = speculative;
  return j;
}

Result<SearchList> enumerate_configs(const PlanSpec& spec) {
  const SearchSpace& s = spec.search;
  SearchList out;
  std::set<std::string> seen;
  auto add = [&](const PlanConfig& c, const std::string& skip_reason) {
    if (!seen.insert(c.key()).second) return;
    if (skip_reason.empty())
      out.configs.push_back(c);
    else
      out.skipped.push_back({c, skip_reason});
  };
  // Optional dimensions: one "base" value when the space does not list them.
  const std::vector<std::string> quants =
      s.quantization.empty() ? std::vector<std::string>{""} : s.quantization;
  const std::vector<int> seqs = s.max_num_seqs.empty() ? std::vector<int>{0} : s.max_num_seqs;
  const std::vector<int> toks =
      s.max_num_batched_tokens.empty() ? std::vector<int>{0} : s.max_num_batched_tokens;
  std::vector<int> prios;
  for (bool b : s.priority_scheduling) prios.push_back(b ? 1 : 0);
  if (prios.empty()) prios = {-1};
  const std::vector<std::string> gpu_types =
      s.gpu_types.empty() ? std::vector<std::string>{""} : s.gpu_types;
  // Speculative settings: the base scenario's (one unset entry) unless the space lists them.
  std::vector<std::pair<bool, Json>> specs;
  for (const Json& e : s.speculative) specs.push_back({true, e});
  if (specs.empty()) specs.push_back({false, Json()});
  // Disaggregated pools of their own shape: TP and GPU type per pool and the share of GPUs
  // (or replicas) that prefill; only for disaggregated configurations, and only when listed.
  const bool pools = !s.prefill_tensor_parallel.empty() || !s.decode_tensor_parallel.empty() ||
                     !s.prefill_share.empty() || !s.prefill_gpu.empty() || !s.decode_gpu.empty();
  const std::vector<int> prefill_tps =
      s.prefill_tensor_parallel.empty() ? std::vector<int>{0} : s.prefill_tensor_parallel;
  const std::vector<int> decode_tps =
      s.decode_tensor_parallel.empty() ? std::vector<int>{0} : s.decode_tensor_parallel;
  const std::vector<double> shares =
      s.prefill_share.empty() ? std::vector<double>{0.5} : s.prefill_share;
  const std::vector<std::string> prefill_gpus =
      s.prefill_gpu.empty() ? std::vector<std::string>{""} : s.prefill_gpu;
  const std::vector<std::string> decode_gpus =
      s.decode_gpu.empty() ? std::vector<std::string>{""} : s.decode_gpu;
  // A pool configuration from c (its TP, replicas): prefill replicas of tpp GPUs x dp x pp
  // (0: c's TP) taking `share` of the GPUs to fill (or of the replicas), the rest decode, each
  // pool on GPUs of type gpp / gpd ("": the topology's). Pools of two types run on the
  // topology rebuilt as whole nodes of each, at most its `nodes` in all.
  auto add_pools = [&](PlanConfig c, int tpp, int tpd, const std::string& gpp,
                       const std::string& gpd, double share, int fill, const plan::Topology& topo,
                       std::string reason) {
    c.prefill_tp = tpp > 0 ? tpp : c.tensor_parallel;
    c.decode_tp = tpd > 0 ? tpd : c.tensor_parallel;
    c.prefill_gpu = gpp;
    c.decode_gpu = gpd;
    const std::string& type_p = gpp.empty() ? c.gpu : gpp;
    const std::string& type_d = gpd.empty() ? c.gpu : gpd;
    const bool mixed = type_p != type_d;
    const int gpn = topo.node.gpus;
    auto nodes_for = [gpn](int gpus) { return (gpus + gpn - 1) / gpn; };
    const int other = c.data_parallel * c.pipeline_parallel;
    const int gp = c.prefill_tp * other, gd = c.decode_tp * other;
    int p = 0, d = 0;
    if (fill > 0) {
      p = std::max(1, static_cast<int>(std::lround(share * fill / gp)));
      // Each pool holds whole nodes: the decode pool has those the prefill pool leaves.
      const int left = std::min(fill - p * gp, (topo.nodes - nodes_for(p * gp)) * gpn);
      d = std::max(0, left) / gd;
    } else {
      p = std::clamp(static_cast<int>(std::lround(share * c.replicas)), 1,
                     std::max(1, c.replicas - 1));
      d = c.replicas - p;
    }
    c.prefill_count = p;
    c.replicas = p + std::max(0, d);
    if (reason.empty() && d < 1)
      reason = fmt::format(
          "no GPU left for a decode replica of {} GPUs after {} prefill "
          "replicas of {}",
          gd, p, gp);
    if (reason.empty() && c.gpus() > topo.total_gpus())
      reason = fmt::format("needs {} GPUs; topology {} has {}", c.gpus(), c.topology_label,
                           topo.total_gpus());
    const int np = nodes_for(p * gp), nd = nodes_for(std::max(1, d) * gd);
    if (reason.empty() && np + nd > topo.nodes)
      reason = fmt::format("the pools take {} + {} whole nodes; topology {} has {}", np, nd,
                           c.topology_label, topo.nodes);
    if (mixed) {
      Json e = c.topology.is_string() ? Json{{"base", c.topology}} : c.topology;
      e["gpu"] = type_p;
      e["nodes"] = np + nd;
      e["node_gpus"] = Json::array({Json{{"gpu", type_d}, {"nodes", nd}}});
      c.topology = e;
    } else if (type_p != c.gpu) {
      c.topology = with_gpu(c.topology, type_p);
    }
    c.gpu = type_p;  // the topology's first type (one key however the GPU was reached)
    add(c, reason);
  };
  // MoE layouts (data_parallel, expert_parallel): the base scenario's unless listed.
  const bool moe_set =
      !s.data_parallel.empty() || !s.expert_parallel.empty() || !s.expert_tensor_parallel.empty();
  const std::vector<int> dps = s.data_parallel.empty() ? std::vector<int>{1} : s.data_parallel;
  // (expert parallelism on, expert TP degree, context parallelism): the experts over
  // tp x dp / etp groups; cp 0 = the base scenario's.
  std::vector<std::tuple<bool, int, int>> eps;
  for (int cp : s.context_parallel.empty() ? std::vector<int>{0} : s.context_parallel)
    for (bool on : s.expert_parallel.empty() ? std::vector<bool>{false} : s.expert_parallel) {
      if (!on) eps.push_back({false, 1, cp});
      for (int etp :
           s.expert_tensor_parallel.empty() ? std::vector<int>{1} : s.expert_tensor_parallel)
        if (on) eps.push_back({true, etp, cp});
    }

  for (std::size_t ti = 0; ti < s.topologies.size(); ++ti) {
    for (const auto& gt : gpu_types) {
      const Json entry = gt.empty() ? s.topologies[ti] : with_gpu(s.topologies[ti], gt);
      plan::Topology topo;
      Status st = config::to_status([&] {
        Json holder = {{"topology", entry}};
        config::JsonReader h(holder, spec.file, fmt::format("/search/topologies/{}", ti));
        topo = plan::resolve_topology(h, "topology");
      });
      if (!st.ok()) return st;
      PlanConfig base;
      base.topology = entry;
      base.topology_label = topology_label(s.topologies[ti], topo.name);
      base.gpu = topo.gpu.name;
      base.topology_gpus = topo.total_gpus();
      const int cap_max =
          s.gpus.empty() ? topo.total_gpus() : *std::max_element(s.gpus.begin(), s.gpus.end());
      const std::vector<int> caps = s.gpus.empty() ? std::vector<int>{topo.total_gpus()} : s.gpus;
      for (int tp : s.tensor_parallel) {
        for (int pp : s.pipeline_parallel)
          for (int dp : dps)
            for (const auto& [ep, etp, cp] : eps) {
              const int per_replica = tp * dp * pp;
              // Replica counts with, for each, why it cannot exist ("" when it can).
              // (replicas, why not, GPUs to fill: 0 for an explicit count)
              std::vector<std::tuple<int, std::string, int>> reps;
              if (s.replicas_fill) {
                for (int cap : caps) {
                  const int usable = std::min(cap, topo.total_gpus());
                  if (usable / per_replica >= 1)
                    reps.push_back({usable / per_replica, "", usable});
                  else
                    reps.push_back({1,
                                    fmt::format("TP{} x DP{} x PP{} needs {} GPUs; {} GPUs "
                                                "available (topology {} has {}, cap {})",
                                                tp, dp, pp, per_replica, usable,
                                                base.topology_label, topo.total_gpus(), cap),
                                    usable});
                }
              } else {
                for (int r : s.replicas) {
                  const int need = per_replica * r;
                  std::string why;
                  if (need > topo.total_gpus())
                    why = fmt::format("needs {} GPUs; topology {} has {}", need,
                                      base.topology_label, topo.total_gpus());
                  else if (need > cap_max)
                    why = fmt::format("needs {} GPUs, over the search's GPU cap of {}", need,
                                      cap_max);
                  reps.push_back({r, why, 0});
                }
              }
              for (const auto& [r, why, fill] : reps)
                for (const auto& q : quants)
                  for (int ns : seqs)
                    for (int nt : toks)
                      for (int pr : prios)
                        for (bool dis : s.disaggregation)
                          for (const auto& [spec_set, spec] : specs) {
                            PlanConfig c = base;
                            c.tensor_parallel = tp;
                            c.pipeline_parallel = pp;
                            c.moe_set = moe_set;
                            c.data_parallel = dp;
                            c.expert_parallel = ep;
                            c.expert_tp = etp;
                            c.context_parallel = cp;
                            c.replicas = r;
                            c.quantization = q;
                            c.max_num_seqs = ns;
                            c.max_num_batched_tokens = nt;
                            c.priority_scheduling = pr;
                            c.disaggregation = dis;
                            c.speculative_set = spec_set;
                            c.speculative = spec;
                            std::string reason = why;
                            if (reason.empty() && dp > 1 && !ep)
                              reason = "attention data parallelism needs expert parallelism";
                            if (reason.empty() && cp > 1 && tp % cp != 0)
                              reason = fmt::format(
                                  "context parallelism {} does not divide tensor_parallel {}", cp,
                                  tp);
                            if (reason.empty() && ep && (tp * dp) % etp != 0)
                              reason = fmt::format(
                                  "expert tensor parallelism {} does not divide the stage's {} "
                                  "GPUs (TP{} x DP{})",
                                  etp, tp * dp, tp, dp);
                            if (reason.empty() && ep && tp * dp / etp < 2)
                              reason = fmt::format(
                                  "expert parallelism needs at least 2 expert groups; TP{} x "
                                  "DP{} / expert TP{} is {}",
                                  tp, dp, etp, tp * dp / etp);
                            if (dis && pools) {
                              for (int tpp : prefill_tps)
                                for (int tpd : decode_tps)
                                  for (const auto& gpp : prefill_gpus)
                                    for (const auto& gpd : decode_gpus)
                                      for (double share : shares)
                                        add_pools(c, tpp, tpd, gpp, gpd, share, fill, topo, reason);
                              continue;
                            }
                            if (reason.empty() && dis && r < 2)
                              reason =
                                  "disaggregation needs at least 2 replicas (1 prefill, 1 decode)";
                            add(c, reason);
                          }
            }
      }
    }
  }
  return out;
}

std::vector<PlanConfig> shard_of(const std::vector<PlanConfig>& all, int index, int count) {
  std::vector<PlanConfig> out;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (static_cast<int>(i % count) == index) out.push_back(all[i]);
  return out;
}

}  // namespace prima::capacity
