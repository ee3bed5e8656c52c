// `prima plan --emit-helm-values FILE`: the configuration the plan ranked first, as values of
// the Helm chart deploy/helm/prima (docs/deploy.md), so that plan -> deploy is one step:
// replicas, GPU type, TP x PP, how the ranks spread over pods (a pod holds at most the
// topology's GPUs per node), the scheduler's batch limits, the PodDisruptionBudget and the
// autoscaler of the scenario; and, in a second values file, the winning scenario itself
// (serve.scenario: with deploy/helm/seeds/sim.yaml, `prima serve --backend sim` serves the
// planned cluster's timing without GPUs). The model source is left for the user to fill in
// (the chart refuses to render without one). Plain functions; thread-compatible.
#pragma once

#include <string>

#include "engine/capacity/plan_spec.h"
#include "engine/config/json_reader.h"
#include "engine/core/status.h"

namespace prima::cli {

// Pods one replica of `ranks` GPUs spans when a node holds `gpus_per_node`: the fewest pods,
// each with the same number of GPUs, none over a node. {pods, gpus per pod}.
std::pair<int, int> pods_for_ranks(int ranks, int gpus_per_node);

// The values file for the first aggregated configuration of plan.json's "ranked" (the chart
// deploys aggregated replicas; a disaggregated winner is passed over, with a line in `note`).
// Errors: nothing ranked (no configuration met the SLO), or the winner's scenario does not
// parse (failed_precondition / invalid_argument naming the configuration).
struct HelmValues {
  std::string values;      // the real deployment (FILE)
  std::string sim_values;  // serve.scenario, an overlay for the sim backend (FILE.sim.yaml)
};
Result<HelmValues> helm_values_yaml(const capacity::PlanSpec& spec, const config::Json& plan,
                                    std::string* note);

// "out/values.sim.yaml" for "out/values.yaml" (".sim" before the extension, or appended).
std::string sim_values_path(const std::string& path);

}  // namespace prima::cli
