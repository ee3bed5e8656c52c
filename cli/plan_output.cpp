// plan.json and the printed ranking of `prima plan` (formats: docs/plan.md).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "cli/plan_economics.h"
#include "cli/plan_runner.h"
#include "engine/capacity/prune.h"

namespace prima::cli {
namespace {

using config::Json;

std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

const capacity::ProbeMetrics* metrics_at(const SearchedConfig& s, double rate) {
  for (const auto& [r, m] : s.probes)
    if (r == rate) return &m;
  return nullptr;
}

Json rerun(const capacity::PlanSpec& spec, const SearchedConfig& s, double rate) {
  Json sets = Json::array();
  for (const auto& x : s.config.sets()) sets.push_back(x);
  for (const auto& x : capacity::probe_sets(spec, rate)) sets.push_back(x);
  return sets;
}

std::string command_of(const capacity::PlanSpec& spec, const Json& sets) {
  if (spec.scenario_path.empty()) return "";
  std::string cmd = "prima simulate " + shell_quote(spec.scenario_path);
  for (const auto& s : sets) cmd += " --set " + shell_quote(s.get<std::string>());
  return cmd;
}

// The ranked table's column: the median error of the cost model on the configuration's GPU
// type (the larger of its pools' types), or why there is none.
std::string error_column(const Json& plan, const Json& config) {
  const Json& f = plan.contains("fidelity") ? plan["fidelity"] : Json::object();
  std::vector<std::string> gpus = {config.value("gpu", "")};
  for (const char* pool : {"prefill", "decode"})
    if (config.contains(pool) && config[pool].contains("gpu"))
      gpus.push_back(config[pool]["gpu"].get<std::string>());
  double worst = 0;
  for (const auto& gpu : gpus) {
    if (!f.contains(gpu) || !f[gpu].value("calibrated", false)) return "uncal.";
    const Json& m = f[gpu].value("median_abs_error", Json());
    if (!m.is_number()) return "unknown";
    worst = std::max(worst, m.get<double>());
  }
  return fmt::format("{:.1f}%", worst * 100);
}

// The Pareto front of output tokens/s per GPU against tokens/s per user (1 / mean TPOT) over
// every simulated operating point (a configuration at a rate) that met the SLO: the points no
// other beats on both, by tokens/s per user ascending.
Json pareto_json(const capacity::PlanSpec& spec, const std::vector<SearchedConfig>& searched) {
  struct Point {
    double per_user, per_gpu, rate;
    const SearchedConfig* s;
  };
  std::vector<Point> pts;
  for (const auto& s : searched)
    for (const auto& [rate, m] : s.probes)
      if (m.ok && m.tpot_mean_s > 0 && capacity::meets_slo(spec.slo, m, nullptr))
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

}  // namespace

Json build_plan_json(const capacity::PlanSpec& spec, const std::vector<SearchedConfig>& searched,
                     const std::vector<PrunedConfig>& pruned,
                     const std::map<std::string, perf::Fidelity>& fidelity,
                     std::int64_t simulations, double wall_s, std::size_t total_configs) {
  Json ranked = Json::array(), failed = Json::array();
  std::vector<std::pair<double, Json>> failed_sorted;
  for (const auto& s : searched) {
    if (s.search.any_met()) {
      const double rate = s.search.best_rps();
      const capacity::ProbeMetrics* m = metrics_at(s, rate);
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
      ranked.push_back(e);
    } else {
      // Failed at min_rps: the first probe says how far it is from the SLO.
      const capacity::ProbeMetrics& m = s.probes.front().second;
      std::vector<std::string> why;
      capacity::meets_slo(spec.slo, m, &why);
      Json sets = rerun(spec, s, spec.rate.min_rps);
      const double d = capacity::slo_distance(spec.slo, m);
      Json e = {{"key", s.config.key()},
                {"config", s.config.to_json()},
                {"rate_rps", spec.rate.min_rps},
                {"violations", why},
                {"slo_distance", std::isfinite(d) ? Json(d) : Json()},
                {"metrics", m.to_json()},
                {"sets", sets}};
      failed_sorted.push_back({d, e});
    }
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Json& a, const Json& b) {
    const double ga = a["goodput_per_gpu"].get<double>(), gb = b["goodput_per_gpu"].get<double>();
    if (ga != gb) return ga > gb;
    const double ca =
        a["cost_per_million_tokens"].is_null() ? 1e300 : a["cost_per_million_tokens"].get<double>();
    const double cb =
        b["cost_per_million_tokens"].is_null() ? 1e300 : b["cost_per_million_tokens"].get<double>();
    if (ca != cb) return ca < cb;
    return a["key"].get<std::string>() < b["key"].get<std::string>();
  });
  std::stable_sort(failed_sorted.begin(), failed_sorted.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (auto& [d, e] : failed_sorted) failed.push_back(std::move(e));
  // The cheapest per token among the ranked (the ranking itself is by goodput per GPU).
  Json cheapest = nullptr;
  double best_cost = 1e300;
  for (const auto& e : ranked)
    if (!e["cost_per_million_tokens"].is_null() &&
        e["cost_per_million_tokens"].get<double>() < best_cost) {
      best_cost = e["cost_per_million_tokens"].get<double>();
      cheapest = e["key"];
    }
  Json pr = Json::array();
  for (const auto& p : pruned) {
    Json sets = Json::array();
    for (const auto& x : p.config.sets()) sets.push_back(x);
    for (const auto& x : capacity::probe_sets(spec, spec.rate.min_rps)) sets.push_back(x);
    pr.push_back({{"key", p.config.key()},
                  {"config", p.config.to_json()},
                  {"kind", p.kind},
                  {"reason", p.reason},
                  {"sets", sets}});
  }
  Json j;
  j["name"] = spec.name;
  j["scenario"] = spec.scenario_path.empty() ? Json("inline") : Json(spec.scenario_path);
  j["slo"] = capacity::slo_json(spec.slo);
  Json fid = Json::object();
  for (const auto& [gpu, f] : fidelity) fid[gpu] = perf::fidelity_to_json(f);
  j["fidelity"] = fid;
  // Where the cost and energy figures come from, for the GPUs of the search.
  Json econ = {{"price_table", spec.economics.file}, {"gpus", Json::object()}};
  for (const auto& [gpu, f] : fidelity) {
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
  j["economics"] = econ;
  j["rate"] = {{"min_rps", spec.rate.min_rps},
               {"max_rps", spec.rate.max_rps > 0 ? Json(spec.rate.max_rps) : Json()},
               {"tolerance", spec.rate.tolerance},
               {"probe_duration_s", spec.rate.probe_duration_s}};
  j["ranked"] = ranked;
  j["cheapest"] = cheapest;
  j["pareto"] = pareto_json(spec, searched);
  j["pruned"] = pr;
  j["failed_slo"] = failed;
  j["configurations"] = total_configs;
  j["searched"] = searched.size();
  j["simulations"] = simulations;
  j["wall_seconds"] = wall_s;
  j["configs_per_minute"] = wall_s > 0 ? total_configs / (wall_s / 60) : 0.0;
  return j;
}

namespace {

// "8 GPUs, $14.40/h, SLO margin 23%" for an entry of plan.json's "target".
std::string target_line(const Json& e) {
  std::string s = fmt::format("{} ({} GPUs", e["key"].get<std::string>(), e["gpus"].get<int>());
  if (e["cost_per_hour"].is_number())
    s += fmt::format(", ${:.2f}/h", e["cost_per_hour"].get<double>());
  if (e.value("energy_kwh_per_million_tokens", Json()).is_number())
    s += fmt::format(", {:.2f} kWh/Mtok", e["energy_kwh_per_million_tokens"].get<double>());
  if (e["slo_margin"].is_number())
    s += fmt::format(", {:.0f}% under the SLO", e["slo_margin"].get<double>() * 100);
  return s + ")";
}

// The answer to a target rate, first.
void print_target(const Json& t) {
  const double rate = t["rate_rps"].get<double>();
  if (t["fewest_gpus"].is_null()) {
    std::printf("  answer     nothing in the space meets the SLO at %g req/s\n", rate);
    return;
  }
  std::printf("  answer     at %g req/s: %s\n", rate, target_line(t["fewest_gpus"]).c_str());
  if (!t["lowest_cost"].is_null() && t["lowest_cost"]["key"] != t["fewest_gpus"]["key"])
    std::printf("  cheapest   %s\n", target_line(t["lowest_cost"]).c_str());
  if (!t["runner_up"].is_null())
    std::printf("  runner-up  %s\n", target_line(t["runner_up"]).c_str());
  const Json& m = t["one_replica_fewer"];
  if (m.value("checked", false) && m.contains("pruned"))
    std::printf("  minimal    one replica fewer is pruned: %s\n",
                m["pruned"].get<std::string>().c_str());
  else if (m.value("checked", false)) {
    std::string why;
    for (const auto& v : m["violations"]) why += (why.empty() ? "" : "; ") + v.get<std::string>();
    std::printf("  minimal    %s with one replica fewer (%s, %d GPUs): %s\n",
                m["meets_slo"].get<bool>() ? "NOT minimal:" : "yes,",
                m["key"].get<std::string>().c_str(), m["gpus"].get<int>(),
                m["meets_slo"].get<bool>() ? "meets the SLO too" : why.c_str());
  } else {
    std::printf("  minimal    %s\n", m["reason"].get<std::string>().c_str());
  }
}

}  // namespace

void print_plan_summary(const Json& p, const std::string& out_dir) {
  std::printf(
      "plan %s: %zu configurations, %zu pruned, %zu searched with %lld simulations "
      "in %.1f s (%.0f configurations/min)\n",
      p["name"].get<std::string>().c_str(), p["configurations"].get<std::size_t>(),
      p["pruned"].size(), p["searched"].get<std::size_t>(), p["simulations"].get<long long>(),
      p["wall_seconds"].get<double>(), p["configs_per_minute"].get<double>());
  if (p.contains("target")) print_target(p["target"]);
  const Json& r = p["ranked"];
  if (!r.empty()) {
    std::printf("  %-4s %-52s %10s %12s %10s %9s %9s\n", "rank", "configuration", "max req/s",
                "goodput/GPU", "$/Mtok", "kWh/Mtok", "model err");
    for (std::size_t i = 0; i < r.size() && i < 10; ++i) {
      const auto& e = r[i];
      const std::string cost =
          e["cost_per_million_tokens"].is_null()
              ? "-"
              : fmt::format("{:.2f}", e["cost_per_million_tokens"].get<double>());
      const std::string energy =
          e["energy_kwh_per_million_tokens"].is_null()
              ? "-"
              : fmt::format("{:.2f}", e["energy_kwh_per_million_tokens"].get<double>());
      std::printf("  %-4zu %-52s %10.3f %12.4f %10s %9s %9s\n", i + 1,
                  e["key"].get<std::string>().c_str(), e["max_rate_rps"].get<double>(),
                  e["goodput_per_gpu"].get<double>(), cost.c_str(), energy.c_str(),
                  error_column(p, e["config"]).c_str());
    }
    if (r.size() > 10) std::printf("  ... %zu more in plan.json\n", r.size() - 10);
  } else {
    if (p["failed_slo"].empty())
      std::printf(
          "  no configuration was simulated: every one was pruned (counts below, reasons in "
          "plan.json)\n");
    else
      std::printf("  no configuration meets the SLO at %s; the closest:\n",
                  p.contains("target") ? "the target rate" : "min_rps");
    const Json& f = p["failed_slo"];
    for (std::size_t i = 0; i < f.size() && i < 5; ++i) {
      std::string why;
      for (const auto& v : f[i]["violations"])
        why += (why.empty() ? "" : "; ") + v.get<std::string>();
      std::printf("  %-52s %s\n", f[i]["key"].get<std::string>().c_str(), why.c_str());
    }
  }
  // How far to trust the rates above, per GPU type of the space.
  if (p.contains("fidelity"))
    for (const auto& [gpu, f] : p["fidelity"].items())
      std::printf("  fidelity   %s: %s\n", gpu.c_str(), f["summary"].get<std::string>().c_str());
  std::map<std::string, int> kinds;
  for (const auto& x : p["pruned"]) ++kinds[x["kind"].get<std::string>()];
  if (!kinds.empty()) {
    std::string s;
    for (const auto& [k, n] : kinds) s += fmt::format("{}{} {}", s.empty() ? "" : ", ", n, k);
    std::printf("  pruned     %s (reasons in plan.json)\n", s.c_str());
  }
  std::printf("  wrote      %s/{plan.json,results.jsonl}\n", out_dir.c_str());
}

}  // namespace prima::cli
