// What the planner knows of each configuration after screening and searching: the searched
// ones with their rate search and probes, the pruned ones with the kind and the reason.
// Plain values.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/capacity/rate_search.h"
#include "engine/capacity/search_space.h"

namespace prima::capacity {

struct SearchedConfig {
  PlanConfig config;
  double bound_rps = 0;
  RateSearch search{1, 1, 0.05};
  // Probes in the order made: (rate, metrics).
  std::vector<std::pair<double, ProbeMetrics>> probes;
};

struct PrunedConfig {
  PlanConfig config;
  std::string kind, reason;  // kind: "invalid", "memory", "roofline"
};

}  // namespace prima::capacity
