// `prima plan` with a target rate: the smallest and the cheapest configuration (see
// plan_target.h).
#include "engine/capacity/plan_target.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <tuple>

#include "engine/capacity/plan_economics.h"
#include "engine/capacity/rate_search.h"

namespace prima::capacity {
namespace {

using config::Json;

// The metrics at the target (the first probe: the search's only rate).
const ProbeMetrics& at_target(const SearchedConfig& s) {
  return s.probes.front().second;
}

// Configurations that met the SLO at the target, fewest GPUs first (then cost per hour,
// goodput per GPU, key).
std::vector<const SearchedConfig*> met_in_order(const PlanSpec& spec,
                                                const std::vector<SearchedConfig>& searched) {
  std::vector<const SearchedConfig*> met;
  for (const auto& s : searched)
    if (!s.probes.empty() && s.search.any_met()) met.push_back(&s);
  auto order = [&](const SearchedConfig* s) {
    const double cost = cost_per_hour(spec, s->config);
    return std::make_tuple(s->config.gpus(), cost < 0 ? 1e300 : cost,
                           -at_target(*s).goodput_rps / s->config.gpus(), s->config.key());
  };
  std::sort(met.begin(), met.end(),
            [&](const SearchedConfig* a, const SearchedConfig* b) { return order(a) < order(b); });
  return met;
}

Json entry(const PlanSpec& spec, const SearchedConfig& s) {
  const ProbeMetrics& m = at_target(s);
  const double cost = cost_per_hour(spec, s.config);
  const double d = slo_distance(spec.slo, m);
  Json e = {{"key", s.config.key()},
            {"config", s.config.to_json()},
            {"gpus", s.config.gpus()},
            {"cost_per_hour", cost < 0 ? Json() : Json(cost)},
            // Headroom to the tightest SLO bound at the target: 0.2 = 20% under it.
            {"slo_margin", std::isfinite(d) ? Json(1 - d) : Json()},
            {"metrics", m.to_json()}};
  e.update(economics_json(spec, s.config, m));
  return e;
}

}  // namespace

const SearchedConfig* fewest_gpus(const PlanSpec& spec,
                                  const std::vector<SearchedConfig>& searched) {
  auto met = met_in_order(spec, searched);
  return met.empty() ? nullptr : met.front();
}

std::optional<PlanConfig> one_replica_fewer(const PlanConfig& winner,
                                            const std::vector<SearchedConfig>& searched) {
  PlanConfig c = winner;
  c.values["replicas"] =
      c.replicas() - 1;  // with pools of their own shape: one decode replica fewer
  if (c.replicas() < (c.disaggregation() ? 2 : 1) || (c.pools() && c.decode_replicas() < 1))
    return std::nullopt;
  for (const auto& s : searched)
    if (s.config.key() == c.key()) return std::nullopt;  // the space had it: searched already
  return c;
}

Json target_json(const PlanSpec& spec, const std::vector<SearchedConfig>& searched,
                 const SearchedConfig* fewer, const std::string& fewer_pruned) {
  const auto met = met_in_order(spec, searched);
  Json t = {{"rate_rps", spec.target_rps}, {"met", met.size()}};
  if (met.empty()) {
    t["fewest_gpus"] = nullptr;
    t["why"] =
        fmt::format("no configuration of the space meets the SLO at {:g} req/s", spec.target_rps);
    return t;
  }
  const SearchedConfig& best = *met.front();
  t["fewest_gpus"] = entry(spec, best);
  t["runner_up"] = met.size() > 1 ? entry(spec, *met[1]) : Json();
  // The cheapest per hour, where every configuration that met the SLO is priced.
  const SearchedConfig* cheapest = nullptr;
  for (const auto* s : met)
    if (cost_per_hour(spec, s->config) >= 0 &&
        (!cheapest || cost_per_hour(spec, s->config) < cost_per_hour(spec, cheapest->config)))
      cheapest = s;
  t["lowest_cost"] = cheapest ? entry(spec, *cheapest) : Json();
  t["why"] = fmt::format(
      "{} meets the SLO at {:g} req/s with {} GPUs, {}{}", best.config.key(), spec.target_rps,
      best.config.gpus(),
      met.size() == 1 ? std::string("the only configuration of the space that meets it")
                      : fmt::format("the fewest of the {} configurations that meet it", met.size()),
      met.size() > 1
          ? fmt::format(" (next: {} with {} GPUs)", met[1]->config.key(), met[1]->config.gpus())
          : "");
  Json mini = Json::object();
  if (fewer) {
    std::vector<std::string> why;
    const ProbeMetrics& m = at_target(*fewer);
    const bool ok = meets_slo(spec.slo, m, &why);
    mini = {{"checked", true}, {"key", fewer->config.key()}, {"gpus", fewer->config.gpus()},
            {"meets_slo", ok}, {"violations", why},          {"metrics", m.to_json()}};
  } else if (!fewer_pruned.empty()) {
    mini = {{"checked", true}, {"meets_slo", false}, {"pruned", fewer_pruned}};
  } else {
    mini = {{"checked", false},
            {"reason", best.config.replicas() > 1
                           ? "the space holds the configuration with one replica fewer: it was "
                             "searched and did not meet the SLO"
                           : "one replica: no smaller deployment of this configuration"}};
  }
  t["one_replica_fewer"] = mini;
  return t;
}

}  // namespace prima::capacity
