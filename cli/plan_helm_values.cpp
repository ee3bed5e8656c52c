// `prima plan --emit-helm-values` (see plan_helm_values.h).
#include "cli/plan_helm_values.h"

#include <fmt/format.h>

#include <sstream>

#include "engine/model/model_spec.h"
#include "engine/scenario/scenario.h"

namespace prima::cli {

using config::Json;

std::pair<int, int> pods_for_ranks(int ranks, int gpus_per_node) {
  if (ranks <= 0) return {1, 0};
  if (gpus_per_node <= 0 || ranks <= gpus_per_node) return {1, ranks};
  int pods = (ranks + gpus_per_node - 1) / gpus_per_node;
  while (ranks % pods != 0) ++pods;  // the same number of GPUs in every pod
  return {pods, ranks / pods};
}

namespace {

// A YAML scalar: a JSON string or number is valid YAML.
std::string q(const Json& v) {
  return v.dump();
}

// `text` indented by `n` spaces after its first line.
std::string indent_rest(const std::string& text, int n) {
  std::string out;
  for (char c : text) {
    out += c;
    if (c == '\n') out += std::string(n, ' ');
  }
  return out;
}

}  // namespace

std::string sim_values_path(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  const std::size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash) || dot == slash + 1)
    return path + ".sim.yaml";
  return path.substr(0, dot) + ".sim" + path.substr(dot);
}

Result<HelmValues> helm_values_yaml(const capacity::PlanSpec& spec, const Json& plan,
                                    std::string* note) {
  static const Json kNone = Json::array();
  const Json& ranked = plan.contains("ranked") ? plan["ranked"] : kNone;
  const Json* best = nullptr;
  for (const auto& e : ranked) {
    if (e["config"].value("disaggregation", false)) {
      if (note && note->empty())
        *note = fmt::format(
            "{} is disaggregated (prefill and decode pools), which the chart does not deploy; "
            "the values are for the best aggregated configuration",
            e["key"].get<std::string>());
      continue;
    }
    best = &e;
    break;
  }
  if (!best)
    return failed_precondition(
        ranked.empty()
            ? "no configuration met the SLO (plan.json's failed_slo lists the closest), so "
              "there is nothing to deploy"
            : "every configuration that met the SLO is disaggregated, which the chart does not "
              "deploy");
  const std::string key = (*best)["key"].get<std::string>();

  // The winner's scenario exactly as the plan simulated it at its best rate.
  Json sj = spec.scenario;
  for (const auto& s : (*best)["sets"]) {
    Status st = scenario::apply_set(&sj, s.get<std::string>());
    if (!st.ok()) return invalid_argument(key + ": " + st.message());
  }
  auto sc = scenario::parse_scenario(sj, spec.scenario_file, spec.scenario_dir);
  if (!sc.ok()) return invalid_argument(key + ": " + sc.status().message());

  const int ranks = sc->plan.tensor_parallel * sc->plan.pipeline_parallel;
  const auto [pods, gpus_per_pod] = pods_for_ranks(ranks, sc->topology.node.gpus);
  const auto& as = sc->cluster.autoscaler;
  const int min_available = sc->cluster.health.min_available;

  std::ostringstream y;
  y << "# Helm values for deploy/helm/prima, written by `prima plan` (plan " << q(spec.name)
    << ").\n"
    << "# The configuration ranked first: " << key << "\n"
    << fmt::format("#   meets the SLO up to {:.4g} req/s ({:.4g} goodput req/s per GPU)",
                   (*best)["max_rate_rps"].get<double>(), (*best)["goodput_per_gpu"].get<double>());
  if ((*best)["cost_per_million_tokens"].is_number())
    y << fmt::format(", ${:.4g} per million output tokens",
                     (*best)["cost_per_million_tokens"].get<double>());
  y << "\n";
  if (best->contains("command"))
    y << "# Reproduce the simulation: " << (*best)["command"].get<std::string>() << "\n";
  y << "# Before `helm install`: set model.url and model.sha256 (or another model source).\n"
    << "# The same configuration on the simulator, without GPUs: add\n"
    << "#   -f deploy/helm/seeds/sim.yaml -f <this file's .sim.yaml sibling>\n"
    << "replicaCount: " << sc->plan.replicas << "\n"
    << "gpuType: " << q(sc->topology.gpu.name) << "\n"
    << "parallel:\n"
    << "  tensorParallel: " << sc->plan.tensor_parallel << "\n"
    << "  pipelineParallel: " << sc->plan.pipeline_parallel << "\n"
    << "podsPerReplica: " << pods << "\n"
    << "gpusPerPod: " << gpus_per_pod << "\n"
    << "serve:\n"
    << "  backend: real\n"
    << "  device: cuda\n"
    << "  maxNumSeqs: " << sc->scheduler.max_num_seqs << "\n"
    << "  maxModelLen: " << (sc->max_model_len > 0 ? sc->max_model_len : sc->model.max_context)
    << "\n"
    << "  # " << sc->model.name << " " << model::quantization_name(sc->quantization)
    << ", as planned\n"
    << "model:\n"
    << "  source: url\n"
    << "  url: \"\"\n"
    << "  sha256: \"\"\n"
    << "podDisruptionBudget:\n"
    << "  enabled: " << (min_available > 0 ? "true" : "false") << "\n"
    << "  minAvailable: " << (min_available > 0 ? min_available : 1) << "\n"
    << "autoscaling:\n"
    << "  enabled: " << (as.enabled ? "true" : "false") << "\n"
    << "  minReplicas: " << (as.enabled ? as.min_replicas : sc->plan.replicas) << "\n"
    << "  maxReplicas: " << (as.enabled ? as.max_replicas : sc->plan.replicas) << "\n"
    << "  gpuUtilization: " << static_cast<int>(as.target_utilization * 100 + 0.5) << "\n";

  std::ostringstream sim;
  sim << "# The scenario `prima plan` (plan " << q(spec.name) << ") simulated for " << key << ":\n"
      << "# an overlay that serves it on the simulator, after the plan's values and\n"
      << "# deploy/helm/seeds/sim.yaml:\n"
      << "#   helm install NAME deploy/helm/prima -f VALUES.yaml -f deploy/helm/seeds/sim.yaml "
         "-f VALUES.sim.yaml\n"
      << "serve:\n"
      << "  scenario: " << indent_rest(sc->resolved.dump(2), 4) << "\n";
  return HelmValues{y.str(), sim.str()};
}

}  // namespace prima::cli
