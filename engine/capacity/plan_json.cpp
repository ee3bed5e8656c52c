// plan.json of `prima plan` (format: docs/plan.md): the ranking, the configurations that
// failed the SLO and those pruned, each with the overrides that rerun it, the Pareto front, the
// fidelity of the cost model and where the cost and energy figures come from.
#include "engine/capacity/plan_json.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engine/capacity/plan_economics.h"
#include "engine/capacity/prune.h"

namespace prima::capacity {
namespace {

using config::Json;

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

const ProbeMetrics* metrics_at(const SearchedConfig& s, double rate) {
  for (const auto& [r, m] : s.probes)
    if (r == rate) return &m;
  return nullptr;
}

Json rerun(const PlanSpec& spec, const SearchedConfig& s, double rate) {
  Json sets = Json::array();
  for (const auto& x : s.config.sets()) sets.push_back(x);
  for (const auto& x : probe_sets(spec, rate)) sets.push_back(x);
  return sets;
}

std::string command_of(const PlanSpec& spec, const Json& sets) {
  if (spec.scenario_path.empty()) return "";
  std::string cmd = "prima simulate " + shell_quote(spec.scenario_path);
  for (const auto& s : sets) cmd += " --set " + shell_quote(s.get<std::string>());
  return cmd;
}

// The Pareto front of output tokens/s per GPU against tokens/s per user (1 / mean TPOT) over
// every simulated operating point (a configuration at a rate) that met the SLO: the points no
// other beats on both, by tokens/s per user ascending.
Json pareto_json(const PlanSpec& spec, const std::vector<SearchedConfig>& searched) {
  struct Point {
    double per_user, per_gpu, rate;
    const SearchedConfig* s;
  };
  std::vector<Point> pts;
  for (const auto& s : searched)
    for (const auto& [rate, m] : s.probes)
      if (m.ok && m.tpot_mean_s > 0 && meets_slo(spec.slo, m, nullptr))
        pts.push_back({1 / m.tpot_mean_s, m.output_tokens_per_s / s.config.gpus(), rate, &s});
  // Highest per-user first; keep a point when it beats every kept one on per-GPU.
  std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) {
    return a.per_user != b.per_user ? a.per_user > b.per_user : a.per_gpu > b.per_gpu;
  });
  std::vector<Point> front;
  for (const auto& p : pts)
    if (front.empty() || p.per_gpu > front.back().per_gpu) front.push_back(p);
  Json out = Json::array();
  for (auto it = front.rbegin(); it != front.rend(); ++it)
    out.push_back({{"key", it->s->config.key()},
                   {"rate_rps", it->rate},
                   {"tokens_per_s_per_gpu", it->per_gpu},
                   {"tokens_per_s_per_user", it->per_user}});
  return out;
}

// A configuration that met the SLO: its best rate, what it delivered there, and how to rerun it.
Json ranked_entry(const PlanSpec& spec, const SearchedConfig& s) {
  const double rate = s.search.best_rps();
  const ProbeMetrics* m = metrics_at(s, rate);
  const int gpus = s.config.gpus();
  Json sets = rerun(spec, s, rate);
  Json e = {{"key", s.config.key()},
            {"config", s.config.to_json()},
            {"max_rate_rps", rate},
            {"goodput_rps", m->goodput_rps},
            {"goodput_per_gpu", m->goodput_rps / gpus},
            {"output_tokens_per_s", m->output_tokens_per_s},
            {"lowest_failing_rate_rps",
             s.search.lowest_failed_rps() > 0 ? Json(s.search.lowest_failed_rps()) : Json()},
            {"roofline_bound_rps", std::isfinite(s.bound_rps) ? Json(s.bound_rps) : Json()},
            {"metrics", m->to_json()},
            {"probes", s.search.probes()},
            {"sets", sets}};
  e.update(economics_json(spec, s.config, *m));
  const std::string cmd = command_of(spec, sets);
  if (!cmd.empty()) e["command"] = cmd;
  return e;
}

// A configuration that failed at min_rps: the first probe says how far it is from the SLO.
std::pair<double, Json> failed_entry(const PlanSpec& spec, const SearchedConfig& s) {
  const ProbeMetrics& m = s.probes.front().second;
  std::vector<std::string> why;
  meets_slo(spec.slo, m, &why);
  Json sets = rerun(spec, s, spec.rate.min_rps);
  const double d = slo_distance(spec.slo, m);
  return {d, Json{{"key", s.config.key()},
                  {"config", s.config.to_json()},
                  {"rate_rps", spec.rate.min_rps},
                  {"violations", why},
                  {"slo_distance", std::isfinite(d) ? Json(d) : Json()},
                  {"metrics", m.to_json()},
                  {"sets", sets}}};
}

// By goodput per GPU, then cost per million tokens, then key.
void sort_ranked(Json* ranked) {
  std::stable_sort(ranked->begin(), ranked->end(), [](const Json& a, const Json& b) {
    const double ga = a["goodput_per_gpu"].get<double>(), gb = b["goodput_per_gpu"].get<double>();
    if (ga != gb) return ga > gb;
    const double ca =
        a["cost_per_million_tokens"].is_null() ? 1e300 : a["cost_per_million_tokens"].get<double>();
    const double cb =
        b["cost_per_million_tokens"].is_null() ? 1e300 : b["cost_per_million_tokens"].get<double>();
    if (ca != cb) return ca < cb;
    return a["key"].get<std::string>() < b["key"].get<std::string>();
  });
}

// The cheapest per token among the ranked (the ranking itself is by goodput per GPU).
Json cheapest_key(const Json& ranked) {
  Json cheapest = nullptr;
  double best_cost = 1e300;
  for (const auto& e : ranked)
    if (!e["cost_per_million_tokens"].is_null() &&
        e["cost_per_million_tokens"].get<double>() < best_cost) {
      best_cost = e["cost_per_million_tokens"].get<double>();
      cheapest = e["key"];
    }
  return cheapest;
}

Json pruned_json(const PlanSpec& spec, const std::vector<PrunedConfig>& pruned) {
  Json pr = Json::array();
  for (const auto& p : pruned) {
    Json sets = Json::array();
    for (const auto& x : p.config.sets()) sets.push_back(x);
    for (const auto& x : probe_sets(spec, spec.rate.min_rps)) sets.push_back(x);
    pr.push_back({{"key", p.config.key()},
                  {"config", p.config.to_json()},
                  {"kind", p.kind},
                  {"reason", p.reason},
                  {"sets", sets}});
  }
  return pr;
}

// Where the cost and energy figures come from, for the GPUs of the search.
Json economics_sources(const PlanSpec& spec, const std::map<std::string, config::Json>& gpus) {
  Json econ = {{"price_table", spec.economics.file}, {"gpus", Json::object()}};
  for (const auto& [gpu, f] : gpus) {
    auto e = spec.economics.gpus.find(gpu);
    if (e == spec.economics.gpus.end()) continue;
    // spec.prices holds every table entry's price, overridden by the plan's own.
    const double price = spec.prices.at(gpu);
    econ["gpus"][gpu] = {
        {"price_per_gpu_hour", price},
        {"price_source",
         price != e->second.price_per_gpu_hour ? "the plan file's prices" : e->second.price_source},
        {"idle_watts", e->second.idle_watts},
        {"peak_watts", e->second.peak_watts},
        {"power_source", e->second.power_source}};
  }
  return econ;
}

}  // namespace

Json build_plan_json(const PlanSpec& spec, const std::vector<SearchedConfig>& searched,
                     const std::vector<PrunedConfig>& pruned,
                     const std::map<std::string, config::Json>& fidelity, std::int64_t simulations,
                     double wall_s, std::size_t total_configs) {
  Json ranked = Json::array(), failed = Json::array();
  std::vector<std::pair<double, Json>> failed_sorted;
  for (const auto& s : searched) {
    if (s.search.any_met())
      ranked.push_back(ranked_entry(spec, s));
    else
      failed_sorted.push_back(failed_entry(spec, s));
  }
  sort_ranked(&ranked);
  std::stable_sort(failed_sorted.begin(), failed_sorted.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [d, e] : failed_sorted) failed.push_back(std::move(e));
  Json j;
  j["name"] = spec.name;
  j["scenario"] = spec.scenario_path.empty() ? Json("inline") : Json(spec.scenario_path);
  // The model asked about, as the base scenario names it (a searched quantization shows in
  // each configuration's key).
  if (spec.scenario.is_object() && spec.scenario.contains("model")) {
    const Json& m = spec.scenario["model"];
    j["model"] = Json{{"name", m.is_string()   ? m
                               : m.is_object() ? m.value("name", Json("custom"))
                                               : Json("custom")},
                      {"quantization", spec.scenario.value("quantization", Json("fp16"))}};
  }
  j["slo"] = slo_json(spec.slo);
  Json fid = Json::object();
  for (const auto& [gpu, f] : fidelity) fid[gpu] = f;
  j["fidelity"] = fid;
  j["economics"] = economics_sources(spec, fidelity);
  j["rate"] = {{"min_rps", spec.rate.min_rps},
               {"max_rps", spec.rate.max_rps > 0 ? Json(spec.rate.max_rps) : Json()},
               {"tolerance", spec.rate.tolerance},
               {"probe_duration_s", spec.rate.probe_duration_s}};
  j["ranked"] = ranked;
  j["cheapest"] = cheapest_key(ranked);
  j["pareto"] = pareto_json(spec, searched);
  j["pruned"] = pruned_json(spec, pruned);
  j["failed_slo"] = failed;
  j["configurations"] = total_configs;
  j["searched"] = searched.size();
  j["simulations"] = simulations;
  j["wall_seconds"] = wall_s;
  j["configs_per_minute"] = wall_s > 0 ? total_configs / (wall_s / 60) : 0.0;
  return j;
}

}  // namespace prima::capacity
