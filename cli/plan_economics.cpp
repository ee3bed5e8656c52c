// Cost and energy of a configuration at an operating point (see plan_economics.h).
#include "cli/plan_economics.h"

namespace prima::cli {

nlohmann::json economics_json(const capacity::PlanSpec& spec, const capacity::PlanConfig& c,
                              const capacity::ProbeMetrics& m) {
  using Json = nlohmann::json;
  Json out = {{"price_per_gpu_hour", nullptr},
              {"cost_per_million_tokens", nullptr},
              {"gpu_utilization", nullptr},
              {"power_watts", nullptr},
              {"energy_kwh_per_million_tokens", nullptr}};
  const bool produced = m.ok && m.output_tokens_per_s > 0;
  if (auto p = spec.prices.find(c.gpu); p != spec.prices.end()) {
    out["price_per_gpu_hour"] = p->second;
    if (produced)
      out["cost_per_million_tokens"] = c.gpus() * p->second / (m.output_tokens_per_s * 3600 / 1e6);
  }
  auto e = spec.economics.gpus.find(c.gpu);
  if (m.ok && m.gpu_utilization > 0 && e != spec.economics.gpus.end()) {
    out["gpu_utilization"] = m.gpu_utilization;
    out["power_watts"] = c.gpus() * capacity::gpu_power_watts(e->second, m.gpu_utilization);
    if (produced)
      out["energy_kwh_per_million_tokens"] = capacity::energy_kwh_per_million_tokens(
          e->second, c.gpus(), m.gpu_utilization, m.output_tokens_per_s);
  }
  return out;
}

}  // namespace prima::cli
