// The report of a finished simulation: report.json (docs/report-format.md) from the cluster's
// recorder and engine, the scenario, and the run's totals. Pure function of its inputs.
#pragma once

#include <nlohmann/json.hpp>

#include "backends/sim/sim_cluster.h"
#include "engine/scenario/scenario.h"

namespace prima::sim {

// What the run measured beside the recorder: the simulated and wall seconds, and the means of
// the KV usage and internal fragmentation over the once-a-second samples.
struct RunTotals {
  double simulated_s = 0, wall_s = 0;
  double kv_usage_mean = 0, fragmentation_mean = 0;
};

nlohmann::ordered_json build_simulation_report(const scenario::Scenario& sc, const SimCluster& cl,
                                               const RunTotals& totals);

}  // namespace prima::sim
