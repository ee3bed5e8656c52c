#include "engine/capacity/search_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

namespace prima::capacity {
using config::Json;

namespace {

const Json& null_json() {
  static const Json kNull;
  return kNull;
}

// The walk: nested loops over the table, outermost first. `reason` carries the first Choice
// reason met on the way down; at the bottom the checks run in table order.
class Walk {
 public:
  Walk(const PlanSpec& spec, SearchList* out) : spec_(spec), table_(*spec.dimensions), out_(*out) {}

  void run() {
    PlanConfig c;
    c.dimensions = spec_.dimensions;
    descend(0, c, "");
  }

 private:
  void descend(std::size_t i, const PlanConfig& c, const std::string& reason) {
    if (i == table_.dimensions.size()) return finish(c, reason);
    const Dimension& d = table_.dimensions[i];
    std::vector<Choice> choices;
    if (d.choices) {
      choices = d.choices(c, spec_.search, spec_);
    } else {
      for (const Json& v : spec_.search.values(d.name)) choices.push_back({v, ""});
    }
    for (const Choice& ch : choices) {
      PlanConfig next = c;
      if (d.apply)
        d.apply(&next, ch.value, spec_.search, spec_);
      else
        next.values[d.name] = ch.value;
      descend(i + 1, next, reason.empty() ? ch.why_not : reason);
    }
  }

  void finish(const PlanConfig& c, std::string reason) {
    if (!seen_.insert(c.key()).second) return;
    for (const Dimension& d : table_.dimensions) {
      if (!reason.empty()) break;
      if (d.check) reason = d.check(c);
    }
    if (reason.empty())
      out_.configs.push_back(c);
    else
      out_.skipped.push_back({c, reason});
  }

  const PlanSpec& spec_;
  const DimensionTable& table_;
  SearchList& out_;
  std::set<std::string> seen_;
};

}  // namespace

const Json& PlanConfig::value(const std::string& name) const {
  const auto it = values.find(name);
  return it == values.end() ? null_json() : it->second;
}

int PlanConfig::count(const std::string& name, int unset) const {
  const Json& v = value(name);
  return v.is_number_integer() ? v.get<int>() : unset;
}

bool PlanConfig::flag(const std::string& name) const {
  const Json& v = value(name);
  return v.is_boolean() && v.get<bool>();
}

bool PlanConfig::disaggregation() const {
  const Json& v = value("disaggregation");
  return v.is_object() || (v.is_boolean() && v.get<bool>());
}

bool PlanConfig::pools() const {
  return value("disaggregation").is_object();
}

int PlanConfig::prefill_replicas() const {
  return pools() ? value("disaggregation").value("prefill_replicas", 1) : replicas() / 2;
}

int PlanConfig::prefill_tp() const {
  return pools() ? value("disaggregation").value("prefill_tp", 1) : tensor_parallel();
}

int PlanConfig::decode_tp() const {
  return pools() ? value("disaggregation").value("decode_tp", 1) : tensor_parallel();
}

std::string PlanConfig::prefill_gpu() const {
  return pools() ? value("disaggregation").value("prefill_gpu", std::string()) : std::string();
}

std::string PlanConfig::decode_gpu() const {
  return pools() ? value("disaggregation").value("decode_gpu", std::string()) : std::string();
}

int PlanConfig::gpus() const {
  if (pools()) return prefill_gpus() + decode_gpus();
  return tensor_parallel() * per_tp_rank() * replicas();
}

std::vector<std::pair<std::string, int>> PlanConfig::gpu_counts() const {
  if (!pools()) return {{gpu, gpus()}};
  const std::string pg = prefill_gpu().empty() ? gpu : prefill_gpu();
  const std::string dg = decode_gpu().empty() ? gpu : decode_gpu();
  if (pg == dg) return {{pg, gpus()}};
  return {{pg, prefill_gpus()}, {dg, decode_gpus()}};
}

std::string PlanConfig::key() const {
  std::string k;
  for (const Dimension& d : dimensions->dimensions) {
    if (!d.key) continue;
    const std::string f = d.key(*this);
    if (!f.empty()) k += (k.empty() ? "" : " ") + f;
  }
  return k;
}

std::vector<std::string> PlanConfig::sets() const {
  std::vector<const Dimension*> order;
  for (const Dimension& d : dimensions->dimensions)
    if (d.sets) order.push_back(&d);
  std::stable_sort(order.begin(), order.end(), [](const Dimension* a, const Dimension* b) {
    return a->set_order < b->set_order;
  });
  std::vector<std::string> s;
  for (const Dimension* d : order) d->sets(*this, &s);
  return s;
}

Json PlanConfig::to_json() const {
  Json j = {{"gpus", gpus()}};
  for (const Dimension& d : dimensions->dimensions)
    if (d.json) d.json(*this, &j);
  return j;
}

Result<SearchList> enumerate_configs(const PlanSpec& spec) {
  SearchList out;
  Status st = config::to_status([&] { Walk(spec, &out).run(); });
  if (!st.ok()) return st;
  return out;
}

std::vector<PlanConfig> shard_of(const std::vector<PlanConfig>& all, int index, int count) {
  std::vector<PlanConfig> out;
  for (std::size_t i = 0; i < all.size(); ++i)
    if (static_cast<int>(i % count) == index) out.push_back(all[i]);
  return out;
}

}  // namespace prima::capacity
