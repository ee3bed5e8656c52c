// The serving dimensions of the search: quantization, the scheduler's batch limits and
// priority classes, disaggregation (with pools of their own shape) and speculative decoding.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engine/capacity/dimension.h"
#include "engine/capacity/search_space.h"
#include "engine/model/model_spec.h"
#include "engine/perf/engine_profile.h"
#include "engine/scenario/speculative.h"

namespace prima::capacity {
using config::Json;

namespace {

Dimension quantization() {
  return scalar_dimension(
      "quantization", "weight/activation formats (fp16, bf16, fp8, w8a8, w4a16, ...)",
      [](const config::JsonReader& r, const std::string& key) {
        const auto names = model::quantization_names();
        return listed_values(
            r, key, "quantization names (" + join_names(names) + ")", [&](const Json& e) {
              return e.is_string() &&
                     std::find(names.begin(), names.end(), e.get<std::string>()) != names.end();
            });
      },
      value_text, "quantization", 1);
}

// A scheduler limit: key `prefix<n>`, override scheduler.<name>.
Dimension batch_limit(const std::string& name, const std::string& about, const std::string& prefix,
                      int set_order) {
  return scalar_dimension(
      name, about, positive_int_values,
      [prefix](const Json& v) { return prefix + std::to_string(v.get<int>()); },
      "scheduler." + name, set_order);
}

Dimension priority_scheduling() {
  return scalar_dimension(
      "priority_scheduling", "whether the queue is ordered by priority class", bool_values,
      [](const Json& v) { return std::string(v.get<bool>() ? "prio" : "fifo"); },
      "scheduler.priority_scheduling", 10);
}

// The speculative section to set, wrapped ({"section": null (off) or an object}) so that "off"
// differs from the base scenario's (no value).
Dimension speculative() {
  Dimension d;
  d.name = "speculative";
  d.about = "speculative decoding settings: null (off) or a scenario \"speculative\" object";
  d.parse = [](const config::JsonReader& r, const PlanSpec& plan) {
    const Json& v = r.value("speculative");
    if (!v.is_array() || v.empty())
      r.fail("speculative",
             "expected a non-empty list of null (off) or speculative objects "
             "(docs/scenario-format.md), got " +
                 config::describe(v));
    for (std::size_t i = 0; i < v.size(); ++i)
      if (!v[i].is_null() && !v[i].is_object())
        r.fail("speculative", i, "expected null or an object, got " + config::describe(v[i]));
    // Each entry parses against the base scenario's model, so a bad one names the plan file and
    // its path rather than pruning every configuration.
    config::JsonReader scenario(plan.scenario, plan.scenario_file);
    const model::ModelSpec target = model::parse_model(scenario, "model");
    std::vector<Json> out;
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (v[i].is_object())
        scenario::parse_speculative(
            config::JsonReader(v[i], plan.file, fmt::format("/search/speculative/{}", i)), target);
      out.push_back(Json{{"section", v[i]}});
    }
    return out;
  };
  d.key = [](const PlanConfig& c) {
    const Json& v = c.value("speculative");
    return v.is_null() ? std::string() : speculative_label(v["section"]);
  };
  d.set_order = 12;
  d.sets = [](const PlanConfig& c, std::vector<std::string>* s) {
    const Json& v = c.value("speculative");
    if (!v.is_null()) s->push_back("speculative=" + v["section"].dump());
  };
  d.json = [](const PlanConfig& c, Json* j) {
    const Json& v = c.value("speculative");
    if (!v.is_null()) (*j)["speculative"] = v["section"];
  };
  return d;
}

}  // namespace

std::string speculative_label(const Json& s) {
  if (!s.is_object()) return "nospec";
  const std::string method = s.value("method", std::string("?"));
  std::string who = method;
  if (method == "draft" && s.contains("draft_model"))
    who += "(" +
           (s["draft_model"].is_string() ? s["draft_model"].get<std::string>()
                                         : s["draft_model"].value("name", std::string("model"))) +
           ")";
  return fmt::format("spec-{}{}@{:g}", who, s.value("num_tokens", 0),
                     s.value("acceptance_rate", 0.0));
}

// The serving engine (topologies/engines/): its terms, scheduler defaults and KV sizing.
Dimension engines() {
  return scalar_dimension(
      "engines", "serving engines (built-in engine profiles: vllm, trtllm, sglang, ...)",
      [](const config::JsonReader& r, const std::string& key) {
        const auto names = perf::builtin_engine_names();
        return listed_values(r, key, "engine names (" + join_names(names) + ")",
                             [&](const Json& e) {
                               return e.is_string() && perf::builtin_engine(e.get<std::string>());
                             });
      },
      value_text, "engine", 13);
}

void add_serving_dimensions(std::vector<Dimension>* t) {
  t->push_back(quantization());
  t->push_back(batch_limit("max_num_seqs", "the scheduler's cap on running sequences", "seqs", 8));
  t->push_back(
      batch_limit("max_num_batched_tokens", "the scheduler's token budget per step", "tok", 9));
  t->push_back(priority_scheduling());
  t->push_back(disaggregation_dimension());
  t->push_back(speculative());
  t->push_back(engines());
}

}  // namespace prima::capacity
