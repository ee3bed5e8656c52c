#include "engine/capacity/dimension.h"

#include "engine/capacity/search_space.h"
#include "engine/plan/topology.h"

namespace prima::capacity {
using config::Json;

const std::vector<Json>& SearchSpace::values(const std::string& name) const {
  static const std::vector<Json> kNone{Json()};
  const auto it = listed.find(name);
  return it == listed.end() ? kNone : it->second;
}

bool SearchSpace::has(const std::string& name) const {
  const auto it = given.find(name);
  return it != given.end() && it->second;
}

const Dimension* DimensionTable::find(const std::string& name) const {
  for (const Dimension& d : dimensions)
    if (d.name == name) return &d;
  return nullptr;
}

std::shared_ptr<const DimensionTable> builtin_dimensions() {
  static const std::shared_ptr<const DimensionTable> kTable = [] {
    auto t = std::make_shared<DimensionTable>();
    add_placement_dimensions(&t->dimensions);
    add_parallel_dimensions(&t->dimensions);
    add_serving_dimensions(&t->dimensions);
    return t;
  }();
  return kTable;
}

std::string join_names(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& x : names) s += (s.empty() ? "" : ", ") + x;
  return s;
}

std::string value_text(const Json& v) {
  return v.is_string() ? v.get<std::string>() : v.dump();
}

Dimension scalar_dimension(
    const std::string& name, const std::string& about,
    std::function<std::vector<Json>(const config::JsonReader&, const std::string&)> parse,
    std::function<std::string(const Json&)> fragment, const std::string& set_path, int set_order) {
  Dimension d;
  d.name = name;
  d.about = about;
  d.parse = [name, parse](const config::JsonReader& r, const PlanSpec&) { return parse(r, name); };
  d.key = [name, fragment](const PlanConfig& c) {
    const Json& v = c.value(name);
    return v.is_null() ? std::string() : fragment(v);
  };
  d.set_order = set_order;
  d.sets = [name, set_path](const PlanConfig& c, std::vector<std::string>* s) {
    const Json& v = c.value(name);
    if (!v.is_null()) s->push_back(set_path + "=" + value_text(v));
  };
  d.json = [name](const PlanConfig& c, Json* j) {
    const Json& v = c.value(name);
    if (!v.is_null()) (*j)[name] = v;
  };
  return d;
}

std::vector<Json> listed_values(const config::JsonReader& r, const std::string& key,
                                const std::string& what,
                                const std::function<bool(const Json&)>& accept) {
  const Json& v = r.value(key);
  if (!v.is_array()) r.fail(key, "expected an array of " + what);
  if (v.empty()) r.fail(key, "empty list: the search space has no " + key + " to try");
  std::vector<Json> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (!accept(v[i]))
      r.fail(key + "/" + std::to_string(i), "expected " + what + ", got " + config::describe(v[i]));
    out.push_back(v[i]);
  }
  return out;
}

std::vector<Json> positive_int_values(const config::JsonReader& r, const std::string& key) {
  return listed_values(r, key, "positive integers", [](const Json& e) {
    return e.is_number_integer() && e.get<long long>() > 0 && e.get<long long>() <= 1 << 20;
  });
}

std::vector<Json> bool_values(const config::JsonReader& r, const std::string& key) {
  return listed_values(r, key, "booleans", [](const Json& e) { return e.is_boolean(); });
}

std::vector<Json> gpu_name_values(const config::JsonReader& r, const std::string& key) {
  std::vector<Json> out =
      listed_values(r, key, "GPU names", [](const Json& e) { return e.is_string(); });
  for (std::size_t i = 0; i < out.size(); ++i)
    if (!plan::gpu_by_name(out[i].get<std::string>()).ok())
      r.fail(key + "/" + std::to_string(i), "unknown GPU type \"" + out[i].get<std::string>() +
                                                "\" (known: " + join_names(plan::gpu_names()) +
                                                ")");
  return out;
}

}  // namespace prima::capacity
