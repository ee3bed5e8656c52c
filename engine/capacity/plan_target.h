// `prima plan` with a target rate (PlanSpec::target_rps, --target-rate): the answer in the
// planner's terms. Every configuration was simulated at the target; of those meeting the
// SLO, the one with the fewest GPUs (ties: the lower cost per hour, then the higher goodput
// per GPU) and the one with the lowest cost per hour (where the plan prices its GPUs), the
// runner-up, the margin to the SLO, and the evidence that the answer is minimal: the same
// configuration with one replica fewer, simulated at the target too (it must fail).
// Plain functions; thread-compatible.
#pragma once

#include <optional>
#include <vector>

#include "engine/capacity/plan_spec.h"
#include "engine/capacity/searched.h"

namespace prima::capacity {

// The configuration with the fewest GPUs among those that met the SLO at the target (null
// when none did).
const SearchedConfig* fewest_gpus(const PlanSpec& spec,
                                  const std::vector<SearchedConfig>& searched);

// The winner with one replica fewer, when it has more than one (two for a disaggregated
// one) and the space did not already hold that configuration.
std::optional<PlanConfig> one_replica_fewer(const PlanConfig& winner,
                                            const std::vector<SearchedConfig>& searched);

// plan.json's "target" section. `fewer`: the one-replica-fewer check (searched at the
// target), or null when there was none to make; `fewer_pruned`: why it was pruned instead
// ("" if it was not).
config::Json target_json(const PlanSpec& spec, const std::vector<SearchedConfig>& searched,
                         const SearchedConfig* fewer, const std::string& fewer_pruned);

}  // namespace prima::capacity
