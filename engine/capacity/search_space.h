// The configurations of a plan's search space: the walk over its dimensions (dimension.h), in
// table order, so a shard i/n is the same list on every machine. Each configuration is a list
// of `--set` overrides of the base scenario (scenario::apply_set), so it is exactly a scenario a
// user can rerun with `prima simulate BASE --set ...`. Combinations that cannot exist (more
// GPUs than the topology or the cap, disaggregation with one replica) are returned as skipped,
// with the reason. Plain values.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/capacity/dimension.h"
#include "engine/capacity/plan_spec.h"
#include "engine/config/json_reader.h"

namespace prima::capacity {

struct PlanConfig {
  // Where it runs: the topology as set into the scenario's "topology" (rebuilt as whole nodes
  // of each type for pools of two GPU types), a short name for keys and tables, its first GPU
  // type and GPU count, its nodes and GPUs per node.
  config::Json topology;
  std::string topology_label;
  std::string gpu;
  int topology_gpus = 0, nodes = 0, node_gpus = 0;
  // Each dimension's value by name; none (null) where the search does not set it: the base
  // scenario's value holds.
  std::map<std::string, config::Json> values;
  // The table this configuration was made from (key, sets and JSON walk it).
  std::shared_ptr<const DimensionTable> dimensions;

  const config::Json& value(const std::string& name) const;  // null when unset
  // An integer dimension's value, `unset` when it has none.
  int count(const std::string& name, int unset = 1) const;
  bool flag(const std::string& name) const;  // a boolean dimension's value (false when unset)

  // The parallel layout (1 where unset), and the MoE layout: expert parallelism on, the GPUs
  // each expert is split over, and the expert groups over the stage's tp x dp GPUs.
  int tensor_parallel() const { return count("tensor_parallel"); }
  int pipeline_parallel() const { return count("pipeline_parallel"); }
  int data_parallel() const { return count("data_parallel"); }
  int replicas() const { return count("replicas"); }
  bool expert_parallel() const { return flag("expert_parallel"); }
  int expert_tp() const { return count("expert_tensor_parallel"); }
  int expert_groups() const { return tensor_parallel() * data_parallel() / expert_tp(); }

  // Disaggregation: off, half the replicas prefill and the rest decode, or pools of their own
  // shape (each its TP and GPU type; pools()).
  bool disaggregation() const;
  bool pools() const;
  int prefill_replicas() const;
  int decode_replicas() const { return replicas() - prefill_replicas(); }
  int prefill_tp() const;  // the pool's TP (pools only)
  int decode_tp() const;
  std::string prefill_gpu() const;  // "" = the topology's
  std::string decode_gpu() const;
  int prefill_gpus() const { return prefill_replicas() * prefill_tp() * per_tp_rank(); }
  int decode_gpus() const { return decode_replicas() * decode_tp() * per_tp_rank(); }

  int gpus() const;
  // GPUs by type, the prefill pool's type first (one entry when the types agree).
  std::vector<std::pair<std::string, int>> gpu_counts() const;

  // A stable, readable identity, e.g. "bitbrick_k1 A100-SXM4-80GB tp4 pp2 x1 w8a8 seqs256".
  std::string key() const;
  // The --set overrides that turn the base scenario into this configuration.
  std::vector<std::string> sets() const;
  config::Json to_json() const;

 private:
  int per_tp_rank() const { return data_parallel() * pipeline_parallel(); }
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

// Enumerates the space: the walk over spec.dimensions. Errors (invalid_argument) name the plan
// file and JSON path.
Result<SearchList> enumerate_configs(const PlanSpec& spec);

// The configurations of shard `index` of `count` (index % count), order kept.
std::vector<PlanConfig> shard_of(const std::vector<PlanConfig>& all, int index, int count);

}  // namespace prima::capacity
