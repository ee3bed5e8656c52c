// The search space of `prima plan` as data: one Dimension per thing a plan can vary (the
// topology, the GPU type, TP, PP, replicas, quantization, batch limits, disaggregation, ...),
// each a single entry that says how the plan file lists its values, which values a
// configuration may take, why a configuration cannot exist, and what a value adds to the
// configuration's key, its `--set` overrides and its JSON. Enumeration (enumerate_configs),
// PlanConfig::key(), sets() and to_json() are generic walks over a DimensionTable, so adding a
// dimension is one entry (builtin_dimensions(), engine/capacity/dimensions_*.cpp) plus its test.
//
// What a dimension does not need: a pruning bound. Screening (prune.h) works on the scenario a
// configuration makes (memory fit, the roofline bound of its batch limit and replicas), so
// every dimension that changes the scenario is screened with no entry of its own.
//
// Tables are immutable once built and shared by the configurations enumerated from them
// (std::shared_ptr<const DimensionTable>); thread-safe to read.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/config/json_reader.h"

namespace prima::capacity {

struct PlanConfig;
struct PlanSpec;

// The values each dimension lists for this plan, by dimension name, in the plan's order (a
// dimension the plan does not list has its `unlisted` values). Null means "the base scenario's
// value": nothing is set, nothing is added to the key.
struct SearchSpace {
  std::map<std::string, std::vector<config::Json>> listed;
  // Whether the plan file lists the dimension (its key, or one it owns, is present).
  std::map<std::string, bool> given;

  const std::vector<config::Json>& values(const std::string& name) const;
  bool has(const std::string& name) const;
};

// One value the walk tries at its point, and why a configuration with it cannot exist ("" when
// it can). A reason given here ranks before every Dimension::check: it is found first.
struct Choice {
  config::Json value;
  std::string why_not;
};

struct Dimension {
  // The plan file's key under "search" (and the name of the value in PlanConfig::values).
  std::string name;
  // One line for docs and tests.
  std::string about;

  // Reads the plan's listing (the key is present; it may also read other keys it owns, each
  // marked read). Errors throw config::ConfigError naming the plan file and the JSON path.
  std::function<std::vector<config::Json>(const config::JsonReader& search, const PlanSpec& plan)>
      parse;
  // Whether the plan lists this dimension, when it owns more keys than `name` (default: `name`
  // is present).
  std::function<bool(const config::JsonReader& search)> listed_in;
  // The values when the plan does not list it (default: one null, the base scenario's); may
  // depend on what else is listed (the MoE layout sets all three of its values once one is).
  std::function<std::vector<config::Json>(const SearchSpace& space)> unlisted;

  // The values to try for the configuration built so far (the dimensions before this one are
  // set); default: the listed values, each possible.
  std::function<std::vector<Choice>(const PlanConfig& so_far, const SearchSpace& space,
                                    const PlanSpec& plan)>
      choices;
  // Sets the chosen value (default: values[name] = v). May derive more: the topology dimension
  // resolves it, the disaggregation dimension splits the replicas into pools.
  std::function<void(PlanConfig* c, const config::Json& v, const SearchSpace& space,
                     const PlanSpec& plan)>
      apply;

  // Why a complete configuration cannot exist ("" when it can). Checks run in table order after
  // the Choice reasons; the first reason is the configuration's.
  std::function<std::string(const PlanConfig& c)> check;
  // Its fragment of the key ("tp4"; "" for none). Fragments join with spaces in table order.
  // The key identifies a configuration in results.jsonl (resume): a fragment, once shipped,
  // never changes.
  std::function<std::string(const PlanConfig& c)> key;
  // Its `--set` overrides of the base scenario (none when the value is null).
  std::function<void(const PlanConfig& c, std::vector<std::string>* sets)> sets;
  // Where its overrides go among the configuration's (ascending; ties keep table order).
  // plan.json lists the overrides: shipped positions never change.
  int set_order = 0;
  // Its fields in the configuration's JSON (plan.json, results.jsonl).
  std::function<void(const PlanConfig& c, config::Json* j)> json;
};

// The dimensions in walk order: the first is the outermost loop. That order is the order of
// the configurations, hence of shards (--shard i/n).
struct DimensionTable {
  std::vector<Dimension> dimensions;
  const Dimension* find(const std::string& name) const;
};

// The built-in table (dimensions_placement.cpp, dimensions_parallel.cpp,
// dimensions_serving.cpp). Shared and immutable.
std::shared_ptr<const DimensionTable> builtin_dimensions();

// The parts of the built-in table, in walk order (for the table and its tests).
void add_placement_dimensions(std::vector<Dimension>* t);  // topologies, gpu_types
void add_parallel_dimensions(std::vector<Dimension>* t);  // tp, pp, dp, ep, etp, cp, gpus, replicas
void add_serving_dimensions(std::vector<Dimension>* t);   // quantization ... speculative
Dimension disaggregation_dimension();  // off, half and half, or pools of their own shape

// Shared by entries: the topology entry with its GPU replaced by `gpu` (a name), as a scenario
// accepts it; the GPUs a "fill" of replicas covers for c (0 when the plan lists replica counts).
config::Json with_gpu(const config::Json& topology_entry, const std::string& gpu);
int fill_gpus(const PlanConfig& c, const SearchSpace& space);

// A dimension whose value is one scalar of the plan's list, read by `parse(search, name)`:
// when set, its key fragment is `fragment(value)`, its one override `<set_path>=<value>`, and
// its JSON field is `name`. Entries override what they do otherwise.
Dimension scalar_dimension(
    const std::string& name, const std::string& about,
    std::function<std::vector<config::Json>(const config::JsonReader&, const std::string&)> parse,
    std::function<std::string(const config::Json&)> fragment, const std::string& set_path,
    int set_order);
// A value as a --set writes it: a string bare, anything else as JSON (4, true).
std::string value_text(const config::Json& v);
// "a, b, c" (messages).
std::string join_names(const std::vector<std::string>& names);

// Parsers of listed values for entries (errors name the plan file and the path of the element).
std::vector<config::Json> positive_int_values(const config::JsonReader& r, const std::string& key);
std::vector<config::Json> bool_values(const config::JsonReader& r, const std::string& key);
std::vector<config::Json> gpu_name_values(const config::JsonReader& r, const std::string& key);
// A non-empty array whose elements `accept` (else "expected <what>, got <value>").
std::vector<config::Json> listed_values(const config::JsonReader& r, const std::string& key,
                                        const std::string& what,
                                        const std::function<bool(const config::Json&)>& accept);

}  // namespace prima::capacity
