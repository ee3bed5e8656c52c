// The placement dimensions of the search: the topology and the GPU type it is built from.
// Together they resolve the cluster every later dimension sizes itself against.
#include <fmt/format.h>

#include "engine/capacity/dimension.h"
#include "engine/capacity/search_space.h"
#include "engine/plan/topology.h"

namespace prima::capacity {
using config::Json;

namespace {

// FNV-1a: a stable short tag for inline topology objects.
std::string short_hash(const std::string& s) {
  std::uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return fmt::format("{:08x}", static_cast<std::uint32_t>(h ^ (h >> 32)));
}

// "bitbrick_k1" for a name; "bitbrick_k1{nodes=4}" for a short patch of a base; otherwise
// the topology's name and a hash of its object.
std::string topology_label(const Json& entry, const std::string& resolved_name) {
  if (entry.is_string()) return entry.get<std::string>();
  if (entry.contains("base") && entry["base"].is_string()) {
    std::string patch;
    for (const auto& [k, v] : entry.items())
      if (k != "base") patch += (patch.empty() ? "" : ",") + k + "=" + v.dump();
    if (patch.size() <= 32 && patch.find('"') == std::string::npos)
      return entry["base"].get<std::string>() + "{" + patch + "}";
  }
  return resolved_name + "#" + short_hash(entry.dump());
}

// The topology listed at `index`, resolved (a bad one names /search/topologies/<index>).
plan::Topology resolve(const Json& entry, const PlanSpec& plan, std::size_t index) {
  Json holder = {{"topology", entry}};
  config::JsonReader h(holder, plan.file, fmt::format("/search/topologies/{}", index));
  return plan::resolve_topology(h, "topology");
}

Dimension topologies() {
  Dimension d;
  d.name = "topologies";
  d.about = "the clusters to place on: topology names or objects, as a scenario's \"topology\"";
  d.listed_in = [](const config::JsonReader&) { return true; };  // required
  d.parse = [](const config::JsonReader& r, const PlanSpec& plan) {
    std::vector<Json> v =
        listed_values(r, "topologies", "topology names or objects",
                      [](const Json& e) { return e.is_string() || e.is_object(); });
    // Resolve each now, so an unknown name or GPU type is a message about the plan.
    for (std::size_t i = 0; i < v.size(); ++i) resolve(v[i], plan, i);
    return v;
  };
  // The value is the index into the listing; gpu_types resolves the pair.
  d.choices = [](const PlanConfig&, const SearchSpace& space, const PlanSpec&) {
    std::vector<Choice> out;
    for (std::size_t i = 0; i < space.values("topologies").size(); ++i)
      out.push_back({Json(i), ""});
    return out;
  };
  d.key = [](const PlanConfig& c) { return c.topology_label; };
  d.set_order = 0;
  d.sets = [](const PlanConfig& c, std::vector<std::string>* s) {
    s->push_back("topology=" +
                 (c.topology.is_string() ? c.topology.get<std::string>() : c.topology.dump()));
  };
  d.json = [](const PlanConfig& c, Json* j) { (*j)["topology"] = c.topology_label; };
  return d;
}

Dimension gpu_types() {
  Dimension d;
  d.name = "gpu_types";
  d.about = "GPU types (gpus.json names) to build each topology from; unlisted: its own";
  d.parse = [](const config::JsonReader& r, const PlanSpec&) {
    return gpu_name_values(r, "gpu_types");
  };
  d.apply = [](PlanConfig* c, const Json& gt, const SearchSpace& space, const PlanSpec& plan) {
    c->values["gpu_types"] = gt;
    const std::size_t ti = c->value("topologies").get<std::size_t>();
    const Json& listed = space.values("topologies")[ti];
    Json entry = listed;
    if (gt.is_string()) entry = with_gpu(listed, gt.get<std::string>());
    const plan::Topology topo = resolve(entry, plan, ti);
    c->topology = entry;
    c->topology_label = topology_label(listed, topo.name);
    c->gpu = topo.gpu.name;
    c->topology_gpus = topo.total_gpus();
    c->nodes = topo.nodes;
    c->node_gpus = topo.node.gpus;
  };
  d.key = [](const PlanConfig& c) { return c.gpu; };
  d.json = [](const PlanConfig& c, Json* j) { (*j)["gpu"] = c.gpu; };
  return d;
}

}  // namespace

Json with_gpu(const Json& entry, const std::string& gpu) {
  if (entry.is_string()) return Json{{"base", entry}, {"gpu", gpu}};
  Json e = entry;
  e["gpu"] = gpu;
  return e;
}

void add_placement_dimensions(std::vector<Dimension>* t) {
  t->push_back(topologies());
  t->push_back(gpu_types());
}

}  // namespace prima::capacity
