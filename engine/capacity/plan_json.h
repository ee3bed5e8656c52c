// plan.json of `prima plan` (format: docs/plan.md). Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/capacity/plan_spec.h"
#include "engine/capacity/searched.h"
#include "engine/config/json_reader.h"
#include "engine/perf/calibration.h"

namespace prima::capacity {

// `fidelity`: how far the cost model can be trusted on each GPU type of the space
// (perf::trust_json of the base scenario's hardware and engine), by GPU name.
config::Json build_plan_json(const PlanSpec& spec, const std::vector<SearchedConfig>& searched,
                             const std::vector<PrunedConfig>& pruned,
                             const std::map<std::string, config::Json>& fidelity,
                             std::int64_t simulations, double wall_s, std::size_t total_configs);

}  // namespace prima::capacity
