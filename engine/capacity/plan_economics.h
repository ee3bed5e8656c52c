// What a configuration costs and draws at one operating point of `prima plan`: its price per
// GPU-hour and cost per million output tokens (the plan's prices), and its power and energy
// per million output tokens (the price table's power model at the simulated busy fraction).
// Stateless; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "engine/capacity/plan_spec.h"
#include "engine/capacity/rate_search.h"
#include "engine/capacity/search_space.h"

namespace prima::capacity {

// Dollars per hour of the configuration's GPUs (each type at its price), or a negative
// number when a type is unpriced.
double cost_per_hour(const PlanSpec& spec, const PlanConfig& c);

// {"price_per_gpu_hour", "cost_per_million_tokens", "gpu_utilization", "power_watts",
//  "energy_kwh_per_million_tokens"}: null where the figure is unknown (no price, no power
// entry, no output tokens, a results file without the busy fraction). Pools of two GPU types:
// the price is the mean over the GPUs, and each pool draws at its type's power and its own busy
// fraction.
nlohmann::json economics_json(const PlanSpec& spec, const PlanConfig& c, const ProbeMetrics& m);

}  // namespace prima::capacity
