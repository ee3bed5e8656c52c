// The printed ranking of `prima plan` (plan.json: engine/capacity/plan_json.h).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "cli/plan_runner.h"

namespace prima::cli {
namespace {

using config::Json;

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

}  // namespace

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
