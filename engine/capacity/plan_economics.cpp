// Cost and energy of a configuration at an operating point (see plan_economics.h).
#include "engine/capacity/plan_economics.h"

namespace prima::capacity {

double cost_per_hour(const PlanSpec& spec, const PlanConfig& c) {
  double cost = 0;
  for (const auto& [gpu, n] : c.gpu_counts()) {
    auto p = spec.prices.find(gpu);
    if (p == spec.prices.end()) return -1;
    cost += n * p->second;
  }
  return cost;
}

namespace {

// Watts of the configuration's GPUs at the operating point, or a negative number when a type
// has no power entry or no busy fraction is known. Pools of two types draw at their own busy
// fractions when the run measured them (the same total as the mean when the types agree,
// since power is linear in the busy fraction).
double power_watts(const PlanSpec& spec, const PlanConfig& c, const ProbeMetrics& m) {
  if (!m.ok || !(m.gpu_utilization > 0)) return -1;
  const auto counts = c.gpu_counts();
  const bool per_pool = counts.size() == 2 && m.pool_utilization.size() == 2;
  double watts = 0;
  for (std::size_t k = 0; k < counts.size(); ++k) {
    auto e = spec.economics.gpus.find(counts[k].first);
    if (e == spec.economics.gpus.end()) return -1;
    const double u = per_pool ? m.pool_utilization[k] : m.gpu_utilization;
    watts += counts[k].second * gpu_power_watts(e->second, u);
  }
  return watts;
}

}  // namespace

nlohmann::json economics_json(const PlanSpec& spec, const PlanConfig& c, const ProbeMetrics& m) {
  using Json = nlohmann::json;
  Json out = {{"price_per_gpu_hour", nullptr},
              {"cost_per_million_tokens", nullptr},
              {"gpu_utilization", nullptr},
              {"power_watts", nullptr},
              {"energy_kwh_per_million_tokens", nullptr}};
  const bool produced = m.ok && m.output_tokens_per_s > 0;
  const double tokens_per_hour_m = m.output_tokens_per_s * 3600 / 1e6;
  if (const double cost = cost_per_hour(spec, c); cost >= 0) {
    const auto counts = c.gpu_counts();
    out["price_per_gpu_hour"] =
        counts.size() == 1 ? spec.prices.at(counts[0].first) : cost / c.gpus();
    if (produced) out["cost_per_million_tokens"] = cost / tokens_per_hour_m;
  }
  if (const double watts = power_watts(spec, c, m); watts >= 0) {
    out["gpu_utilization"] = m.gpu_utilization;
    out["power_watts"] = watts;
    if (produced)
      out["energy_kwh_per_million_tokens"] =
          energy_kwh_per_million_tokens(watts, m.output_tokens_per_s);
  }
  return out;
}

}  // namespace prima::capacity
