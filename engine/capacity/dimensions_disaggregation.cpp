// The disaggregation dimension of the search: off, the classic split (half the replicas
// prefill, the rest decode, all of the configuration's shape), or pools of their own shape:
// each pool its TP and GPU type, and a share of the GPUs (or replicas) for prefill. Pools of two
// GPU types run on the search topology rebuilt as whole nodes of each type.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "engine/capacity/dimension.h"
#include "engine/capacity/search_space.h"

namespace prima::capacity {
using config::Json;

namespace {

const char* const kPoolKeys[] = {"prefill_tensor_parallel", "decode_tensor_parallel", "prefill_gpu",
                                 "decode_gpu", "prefill_share"};

// The listed values of one pool key, or `unlisted`.
std::vector<Json> pool_values(const config::JsonReader& r, const std::string& key,
                              std::vector<Json> unlisted) {
  if (!r.has(key)) return unlisted;
  if (key == "prefill_gpu" || key == "decode_gpu") return gpu_name_values(r, key);
  if (key != "prefill_share") return positive_int_values(r, key);
  std::vector<Json> out;
  const std::vector<double> shares = r.numbers(key);
  for (std::size_t i = 0; i < shares.size(); ++i) {
    if (!(shares[i] > 0 && shares[i] < 1))
      r.fail(key + "/" + std::to_string(i),
             "expected a share of the GPUs in (0, 1), got " + std::to_string(shares[i]));
    out.push_back(shares[i]);
  }
  return out;
}

// The listing: each disaggregation value, where `true` with any pool key listed becomes every
// pool shape {"tpp", "tpd", "gpp", "gpd", "share"} (0 / "": the configuration's TP / GPU).
std::vector<Json> parse(const config::JsonReader& r) {
  const std::vector<Json> on_off =
      r.has("disaggregation") ? bool_values(r, "disaggregation") : std::vector<Json>{false};
  bool pools = false;
  for (const char* k : kPoolKeys) pools = pools || r.has(k);
  const auto tpp = pool_values(r, "prefill_tensor_parallel", {0});
  const auto tpd = pool_values(r, "decode_tensor_parallel", {0});
  const auto gpp = pool_values(r, "prefill_gpu", {""});
  const auto gpd = pool_values(r, "decode_gpu", {""});
  const auto shares = pool_values(r, "prefill_share", {0.5});
  std::vector<Json> out;
  for (const Json& on : on_off) {
    if (!on.get<bool>() || !pools) {
      out.push_back(on);
      continue;
    }
    for (const Json& a : tpp)
      for (const Json& b : tpd)
        for (const Json& g : gpp)
          for (const Json& h : gpd)
            for (const Json& s : shares)
              out.push_back({{"tpp", a}, {"tpd", b}, {"gpp", g}, {"gpd", h}, {"share", s}});
  }
  return out;
}

int nodes_for(int gpus, int per_node) {
  return (gpus + per_node - 1) / per_node;
}

// Splits c into pools of `shape`: prefill replicas taking `share` of the GPUs to fill (or of the
// replicas), the decode pool the whole nodes the prefill pool leaves (or the other replicas).
void apply_pools(PlanConfig* c, const Json& shape, const SearchSpace& space) {
  const int tp_p = shape["tpp"].get<int>() > 0 ? shape["tpp"].get<int>() : c->tensor_parallel();
  const int tp_d = shape["tpd"].get<int>() > 0 ? shape["tpd"].get<int>() : c->tensor_parallel();
  const std::string gpp = shape["gpp"].get<std::string>(), gpd = shape["gpd"].get<std::string>();
  const double share = shape["share"].get<double>();
  const std::string type_p = gpp.empty() ? c->gpu : gpp, type_d = gpd.empty() ? c->gpu : gpd;
  const int other = c->data_parallel() * c->pipeline_parallel();
  const int gp = tp_p * other, gd = tp_d * other, gpn = c->node_gpus;
  const int fill = fill_gpus(*c, space);
  int p = 0, d = 0;
  if (fill > 0) {
    p = std::max(1, static_cast<int>(std::lround(share * fill / gp)));
    const int left = std::min(fill - p * gp, (c->nodes - nodes_for(p * gp, gpn)) * gpn);
    d = std::max(0, left) / gd;
  } else {
    const int r = c->replicas();
    p = std::clamp(static_cast<int>(std::lround(share * r)), 1, std::max(1, r - 1));
    d = r - p;
  }
  Json pools = {{"prefill_replicas", p}, {"prefill_tp", tp_p}, {"decode_tp", tp_d}};
  if (!gpp.empty()) pools["prefill_gpu"] = gpp;
  if (!gpd.empty()) pools["decode_gpu"] = gpd;
  c->values["disaggregation"] = pools;
  c->values["replicas"] = p + std::max(0, d);
  if (type_p != type_d) {
    Json e = c->topology.is_string() ? Json{{"base", c->topology}} : c->topology;
    e["gpu"] = type_p;
    e["nodes"] = nodes_for(p * gp, gpn) + nodes_for(std::max(1, d) * gd, gpn);
    e["node_gpus"] =
        Json::array({Json{{"gpu", type_d}, {"nodes", nodes_for(std::max(1, d) * gd, gpn)}}});
    c->topology = e;
  } else if (type_p != c->gpu) {
    c->topology = with_gpu(c->topology, type_p);
  }
  c->gpu = type_p;  // the topology's first type (one key however the GPU was reached)
}

std::string check(const PlanConfig& c) {
  if (!c.pools())
    return c.disaggregation() && c.replicas() < 2
               ? "disaggregation needs at least 2 replicas (1 prefill, 1 decode)"
               : "";
  const int other = c.data_parallel() * c.pipeline_parallel();
  const int p = c.prefill_replicas(), d = c.decode_replicas();
  const int gp = c.prefill_tp() * other, gd = c.decode_tp() * other;
  if (d < 1)
    return fmt::format(
        "no GPU left for a decode replica of {} GPUs after {} prefill replicas of {}", gd, p, gp);
  if (c.gpus() > c.topology_gpus)
    return fmt::format("needs {} GPUs; topology {} has {}", c.gpus(), c.topology_label,
                       c.topology_gpus);
  const int np = nodes_for(p * gp, c.node_gpus), nd = nodes_for(d * gd, c.node_gpus);
  if (np + nd > c.nodes)
    return fmt::format("the pools take {} + {} whole nodes; topology {} has {}", np, nd,
                       c.topology_label, c.nodes);
  return "";
}

std::string key(const PlanConfig& c) {
  if (!c.disaggregation()) return "";
  if (!c.pools()) return "disagg";
  auto at = [](const std::string& g) { return g.empty() ? std::string() : "@" + g; };
  return fmt::format("disagg p{}xtp{}{} d{}xtp{}{}", c.prefill_replicas(), c.prefill_tp(),
                     at(c.prefill_gpu()), c.decode_replicas(), c.decode_tp(), at(c.decode_gpu()));
}

void sets(const PlanConfig& c, std::vector<std::string>* s) {
  if (c.pools()) {
    using OJson = nlohmann::ordered_json;
    OJson pool_p = {{"tensor_parallel", c.prefill_tp()}},
          pool_d = {{"tensor_parallel", c.decode_tp()}};
    if (!c.prefill_gpu().empty()) pool_p["gpu"] = c.prefill_gpu();
    if (!c.decode_gpu().empty()) pool_d["gpu"] = c.decode_gpu();
    s->push_back("disaggregation=" + OJson{{"prefill_replicas", c.prefill_replicas()},
                                           {"decode_replicas", c.decode_replicas()},
                                           {"prefill", pool_p},
                                           {"decode", pool_d}}
                                         .dump());
  } else if (c.disaggregation()) {
    s->push_back(fmt::format(R"(disaggregation={{"prefill_replicas":{},"decode_replicas":{}}})",
                             c.prefill_replicas(), c.decode_replicas()));
  } else {
    s->push_back("disaggregation=null");
  }
}

void json(const PlanConfig& c, Json* j) {
  (*j)["disaggregation"] = c.disaggregation();
  if (!c.pools()) return;
  (*j)["prefill"] = {{"replicas", c.prefill_replicas()}, {"tensor_parallel", c.prefill_tp()}};
  (*j)["decode"] = {{"replicas", c.decode_replicas()}, {"tensor_parallel", c.decode_tp()}};
  if (!c.prefill_gpu().empty()) (*j)["prefill"]["gpu"] = c.prefill_gpu();
  if (!c.decode_gpu().empty()) (*j)["decode"]["gpu"] = c.decode_gpu();
}

}  // namespace

Dimension disaggregation_dimension() {
  Dimension d;
  d.name = "disaggregation";
  d.about =
      "prefill and decode on separate replicas: off, half and half, or pools of their own shape "
      "(prefill_tensor_parallel, decode_tensor_parallel, prefill_gpu, decode_gpu, prefill_share)";
  d.listed_in = [](const config::JsonReader& r) {
    bool any = r.has("disaggregation");
    for (const char* k : kPoolKeys) any = any || r.has(k);
    return any;
  };
  d.parse = [](const config::JsonReader& r, const PlanSpec&) { return parse(r); };
  d.unlisted = [](const SearchSpace&) { return std::vector<Json>{false}; };
  d.apply = [](PlanConfig* c, const Json& v, const SearchSpace& space, const PlanSpec&) {
    if (v.is_object())
      apply_pools(c, v, space);
    else
      c->values["disaggregation"] = v;
  };
  d.check = check;
  d.key = key;
  d.set_order = 11;
  d.sets = sets;
  d.json = json;
  return d;
}

}  // namespace prima::capacity
