// The configurations of a plan's search space: the cartesian product of topologies x GPU
// types x GPU caps x TP x PP x attention DP x EP x replicas x quantization x batch limits x
// priority scheduling x disaggregation, in a fixed order (so a shard i/n is the same list on every
// machine). Each configuration is a list of `--set` overrides of the base scenario
// (scenario::apply_set), so it is exactly a scenario a user can rerun with `prima simulate BASE
// --set ...`. Combinations that cannot exist (more GPUs than the topology or the cap,
// disaggregation with one replica) are returned as skipped, with the reason. Plain values.
#pragma once

#include <string>
#include <vector>

#include "engine/capacity/plan_spec.h"
#include "engine/config/json_reader.h"

namespace prima::capacity {

struct PlanConfig {
  config::Json topology;       // as set into the scenario's "topology"
  std::string topology_label;  // short name for keys and tables
  std::string gpu;             // GPU type name
  int topology_gpus = 0;       // GPUs the topology has
  int tensor_parallel = 1, pipeline_parallel = 1, replicas = 1;
  // The MoE layout, when the search lists it (moe_set; else the base scenario's): attention
  // DP groups and expert parallelism over the stage's tp x dp GPUs.
  bool moe_set = false;
  int data_parallel = 1;
  bool expert_parallel = false;
  int expert_tp = 1;  // with expert_parallel: the GPUs each expert is split over
  int expert_groups() const { return tensor_parallel * data_parallel / expert_tp; }
  int context_parallel = 0;        // 0 = the base scenario's
  std::string quantization;        // "" = the base scenario's
  int max_num_seqs = 0;            // 0 = the base scenario's
  int max_num_batched_tokens = 0;  // 0 = the base scenario's
  int priority_scheduling = -1;    // -1 = the base scenario's, else 0 / 1
  bool disaggregation = false;     // half the replicas prefill, the rest decode
  // The speculative section to set (null: off), when the search lists them (else the base
  // scenario's: speculative_set false).
  bool speculative_set = false;
  config::Json speculative;

  // Disaggregated pools of their own shape (when the search lists them): prefill replicas
  // and each pool's TP (0: replicas / 2 and tensor_parallel, the classic split).
  int prefill_count = 0, prefill_tp = 0, decode_tp = 0;
  // Each pool's GPU type when the search lists them ("": `gpu`). When they differ, `topology`
  // is the search's rebuilt as whole nodes of each type.
  std::string prefill_gpu, decode_gpu;
  bool pools() const { return disaggregation && (prefill_tp > 0 || decode_tp > 0); }
  // GPUs by type, the prefill pool's type first (one entry when the types agree).
  std::vector<std::pair<std::string, int>> gpu_counts() const;

  int gpus() const {
    if (pools()) return prefill_gpus() + decode_gpus();
    return tensor_parallel * data_parallel * pipeline_parallel * replicas;
  }
  // With pools of their own shape: each pool's GPUs.
  int prefill_gpus() const {
    return prefill_replicas() * prefill_tp * data_parallel * pipeline_parallel;
  }
  int decode_gpus() const {
    return decode_replicas() * decode_tp * data_parallel * pipeline_parallel;
  }
  int prefill_replicas() const { return prefill_count > 0 ? prefill_count : replicas / 2; }
  int decode_replicas() const { return replicas - prefill_replicas(); }
  // A stable, readable identity, e.g. "bitbrick_k1 A100-SXM4-80GB tp4 pp2 x1 w8a8 seqs256".
  std::string key() const;
  // The --set overrides that turn the base scenario into this configuration.
  std::vector<std::string> sets() const;
  config::Json to_json() const;
};

// "spec-mtp3@0.7", "spec-draft(llama-2-7b)4@0.8", "nospec": a speculative entry in a key.
std::string speculative_label(const config::Json& s);

struct SkippedConfig {
  PlanConfig config;
  std::string reason;
};

struct SearchList {
  std::vector<PlanConfig> configs;
  std::vector<SkippedConfig> skipped;
};

// Enumerates the space. Errors (invalid_argument) name the plan file and JSON path.
Result<SearchList> enumerate_configs(const PlanSpec& spec);

// The configurations of shard `index` of `count` (index % count), order kept.
std::vector<PlanConfig> shard_of(const std::vector<PlanConfig>& all, int index, int count);

}  // namespace prima::capacity
