// The parallel layout dimensions of the search: TP, PP, the MoE layout (attention DP, expert
// parallelism and expert TP), context parallelism, the GPU cap and the replica count.
#include <fmt/format.h>

#include <algorithm>

#include "engine/capacity/dimension.h"
#include "engine/capacity/search_space.h"

namespace prima::capacity {
using config::Json;

namespace {

constexpr const char* kStrategy = "deployment.parallel_strategy.";

// A dimension of positive integers: key `prefix<n>`, one override of `set_path`, its JSON
// field named as the dimension. `unlisted` when the plan does not list it.
Dimension integers(const std::string& name, const std::string& about, const std::string& prefix,
                   const std::string& set_path, int set_order, std::vector<Json> unlisted) {
  Dimension d = scalar_dimension(
      name, about, positive_int_values,
      [prefix](const Json& v) { return prefix + std::to_string(v.get<int>()); }, set_path,
      set_order);
  d.unlisted = [unlisted](const SearchSpace&) { return unlisted; };
  return d;
}

// The MoE layout (data_parallel, expert_parallel, expert_tensor_parallel) is set as a whole once
// the plan lists any of it: the others take their plain value (1, off, 1); else the base
// scenario's layout holds.
bool moe_listed(const SearchSpace& s) {
  return s.has("data_parallel") || s.has("expert_parallel") || s.has("expert_tensor_parallel");
}

Dimension data_parallel() {
  Dimension d = integers("data_parallel", "attention data-parallel groups per stage (MoE)", "dp",
                         std::string(kStrategy) + "data_parallel", 4, {});
  d.unlisted = [](const SearchSpace& s) {
    return std::vector<Json>{moe_listed(s) ? Json(1) : Json()};
  };
  d.key = [](const PlanConfig& c) {
    return c.data_parallel() > 1 ? fmt::format("dp{}", c.data_parallel()) : std::string();
  };
  d.check = [](const PlanConfig& c) {
    return c.data_parallel() > 1 && !c.expert_parallel()
               ? std::string("attention data parallelism needs expert parallelism")
               : std::string();
  };
  return d;
}

Dimension expert_parallel() {
  Dimension d;
  d.name = "expert_parallel";
  d.about = "whether the routed experts spread over the stage's tp x dp GPUs (MoE)";
  d.parse = [](const config::JsonReader& r, const PlanSpec&) {
    return bool_values(r, "expert_parallel");
  };
  d.unlisted = [](const SearchSpace& s) {
    return std::vector<Json>{moe_listed(s) ? Json(false) : Json()};
  };
  d.check = [](const PlanConfig& c) {
    const int stage = c.tensor_parallel() * c.data_parallel();
    if (!c.expert_parallel() || stage % c.expert_tp() != 0 || c.expert_groups() >= 2)
      return std::string();
    return fmt::format(
        "expert parallelism needs at least 2 expert groups; TP{} x DP{} / expert TP{} is {}",
        c.tensor_parallel(), c.data_parallel(), c.expert_tp(), c.expert_groups());
  };
  d.key = [](const PlanConfig& c) {
    if (c.value("expert_parallel").is_null()) return std::string();
    return c.expert_parallel() ? fmt::format("ep{}", c.expert_groups()) : std::string("noep");
  };
  d.set_order = 5;
  d.sets = [](const PlanConfig& c, std::vector<std::string>* s) {
    if (c.value("expert_parallel").is_null()) return;
    s->push_back(fmt::format("{}expert_parallel={}", kStrategy,
                             c.expert_parallel() ? c.expert_groups() : 1));
  };
  d.json = [](const PlanConfig& c, Json* j) {
    if (!c.value("expert_parallel").is_null())
      (*j)["expert_parallel"] = c.expert_parallel() ? c.expert_groups() : 1;
  };
  return d;
}

Dimension expert_tensor_parallel() {
  Dimension d;
  d.name = "expert_tensor_parallel";
  d.about = "with expert parallelism: the GPUs each routed expert is split over";
  d.parse = [](const config::JsonReader& r, const PlanSpec&) {
    return positive_int_values(r, "expert_tensor_parallel");
  };
  d.unlisted = [](const SearchSpace& s) {
    return std::vector<Json>{moe_listed(s) ? Json(1) : Json()};
  };
  // Only with the experts spread: whole experts otherwise.
  d.choices = [](const PlanConfig& c, const SearchSpace& s, const PlanSpec&) {
    std::vector<Choice> out;
    if (!c.expert_parallel()) {
      out.push_back({moe_listed(s) ? Json(1) : Json(), ""});
      return out;
    }
    for (const Json& v : s.values("expert_tensor_parallel")) out.push_back({v, ""});
    return out;
  };
  d.check = [](const PlanConfig& c) {
    const int stage = c.tensor_parallel() * c.data_parallel();
    if (!c.expert_parallel() || stage % c.expert_tp() == 0) return std::string();
    return fmt::format(
        "expert tensor parallelism {} does not divide the stage's {} GPUs (TP{} x DP{})",
        c.expert_tp(), stage, c.tensor_parallel(), c.data_parallel());
  };
  d.key = [](const PlanConfig& c) {
    return c.expert_parallel() && c.expert_tp() > 1 ? fmt::format("etp{}", c.expert_tp())
                                                    : std::string();
  };
  d.json = [](const PlanConfig& c, Json* j) {
    if (c.expert_parallel() && c.expert_tp() > 1) (*j)["expert_tensor_parallel"] = c.expert_tp();
  };
  return d;
}

Dimension context_parallel() {
  Dimension d = integers("context_parallel", "GPUs of a TP group each sequence's KV spreads over",
                         "cp", std::string(kStrategy) + "context_parallel", 6, {Json()});
  d.check = [](const PlanConfig& c) {
    const int cp = c.count("context_parallel", 0);
    if (cp <= 1 || c.tensor_parallel() % cp == 0) return std::string();
    return fmt::format("context parallelism {} does not divide tensor_parallel {}", cp,
                       c.tensor_parallel());
  };
  return d;
}

bool fill(const SearchSpace& s) {
  const auto& r = s.values("replicas");
  return r.size() == 1 && r[0].is_string();
}

// The cap on the GPUs a configuration uses. It has no key, overrides or JSON of its own: it
// sizes the replicas. With "fill" each cap is tried; else the largest bounds the counts.
Dimension gpu_cap() {
  Dimension d;
  d.name = "gpus";
  d.about = "caps on the GPUs a configuration uses; unlisted: the topology's count";
  d.parse = [](const config::JsonReader& r, const PlanSpec&) {
    return positive_int_values(r, "gpus");
  };
  d.choices = [](const PlanConfig&, const SearchSpace& s, const PlanSpec&) {
    std::vector<Choice> out;
    const auto& caps = s.values("gpus");
    if (fill(s)) {
      for (const Json& v : caps) out.push_back({v, ""});
    } else {
      Json most;
      for (const Json& v : caps)
        if (!v.is_null() && (most.is_null() || v.get<int>() > most.get<int>())) most = v;
      out.push_back({most, ""});
    }
    return out;
  };
  return d;
}

Dimension replicas() {
  Dimension d = integers("replicas", "replica counts, or \"fill\": as many as the GPUs hold", "x",
                         "deployment.replicas", 7, {Json(1)});
  d.parse = [](const config::JsonReader& r, const PlanSpec&) {
    const Json& v = r.value("replicas");
    if (!v.is_string()) return positive_int_values(r, "replicas");
    if (v.get<std::string>() != "fill")
      r.fail("replicas",
             "expected \"fill\" or a list of positive integers, got " + config::describe(v));
    return std::vector<Json>{v};
  };
  // Each count, with why it cannot exist on the topology (or over the cap); with "fill", the
  // one count the capped GPUs hold.
  d.choices = [](const PlanConfig& c, const SearchSpace& s, const PlanSpec&) {
    const int per_replica = c.tensor_parallel() * c.data_parallel() * c.pipeline_parallel();
    const int cap = c.count("gpus", c.topology_gpus);
    std::vector<Choice> out;
    if (fill(s)) {
      const int usable = std::min(cap, c.topology_gpus);
      if (usable / per_replica >= 1) {
        out.push_back({Json(usable / per_replica), ""});
      } else {
        out.push_back(
            {Json(1), fmt::format("TP{} x DP{} x PP{} needs {} GPUs; {} GPUs available "
                                  "(topology {} has {}, cap {})",
                                  c.tensor_parallel(), c.data_parallel(), c.pipeline_parallel(),
                                  per_replica, usable, c.topology_label, c.topology_gpus, cap)});
      }
      return out;
    }
    for (const Json& v : s.values("replicas")) {
      const int need = per_replica * v.get<int>();
      std::string why;
      if (need > c.topology_gpus)
        why = fmt::format("needs {} GPUs; topology {} has {}", need, c.topology_label,
                          c.topology_gpus);
      else if (need > cap)
        why = fmt::format("needs {} GPUs, over the search's GPU cap of {}", need, cap);
      out.push_back({v, why});
    }
    return out;
  };
  return d;
}

}  // namespace

int fill_gpus(const PlanConfig& c, const SearchSpace& s) {
  return fill(s) ? std::min(c.count("gpus", c.topology_gpus), c.topology_gpus) : 0;
}

void add_parallel_dimensions(std::vector<Dimension>* t) {
  t->push_back(integers("tensor_parallel", "tensor-parallel degrees", "tp",
                        std::string(kStrategy) + "tensor_parallel", 2, {Json(1)}));
  t->push_back(integers("pipeline_parallel", "pipeline-parallel degrees", "pp",
                        std::string(kStrategy) + "pipeline_parallel", 3, {Json(1)}));
  t->push_back(data_parallel());
  t->push_back(expert_parallel());
  t->push_back(expert_tensor_parallel());
  t->push_back(context_parallel());
  t->push_back(gpu_cap());
  t->push_back(replicas());
}

}  // namespace prima::capacity
