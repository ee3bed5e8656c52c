#include "engine/faults/fault_spec.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

namespace prima::faults {
namespace {

struct TypeName {
  FaultType type;
  const char* name;
};
constexpr TypeName kTypes[] = {
    {FaultType::kThermal, "thermal"},
    {FaultType::kLinkDegradation, "link_degradation"},
    {FaultType::kLinkDown, "link_down"},
    {FaultType::kNodeFailure, "node_failure"},
    {FaultType::kGpuFailure, "gpu_failure"},
    {FaultType::kStraggler, "straggler"},
    {FaultType::kNvlinkSaturation, "nvlink_saturation"},
    {FaultType::kRdmaRegistration, "rdma_registration_failure"},
    {FaultType::kUnresponsivePeer, "unresponsive_peer"},
    {FaultType::kStorageSlowdown, "storage_slowdown"},
    {FaultType::kCorruptedShard, "corrupted_shard"},
};

using Kind = FaultTarget::Kind;

std::string range_text(int n) {
  return n == 1 ? "0" : fmt::format("0-{}", n - 1);
}

// Parses "gpu<D>_nvl", "node<i>_nic", "node<i>_pcie"; returns false if the form is unknown.
bool parse_link_name(const std::string& s, std::string* kind, int* index) {
  auto num = [](const std::string& digits, int* out) {
    if (digits.empty() || digits.size() > 7) return false;
    for (char c : digits)
      if (c < '0' || c > '9') return false;
    *out = std::stoi(digits);
    return true;
  };
  for (const char* pre : {"gpu", "node"}) {
    const std::string p = pre;
    if (s.rfind(p, 0) != 0) continue;
    auto us = s.find('_', p.size());
    if (us == std::string::npos) return false;
    if (!num(s.substr(p.size(), us - p.size()), index)) return false;
    *kind = p + s.substr(us);  // "gpu_nvl", "node_nic", "node_pcie"
    return true;
  }
  return false;
}

FaultTarget parse_target(const config::JsonReader& r, const plan::Topology& t) {
  const std::string key = "target";
  const config::Json& v = r.value(key);
  FaultTarget tg;
  const std::string forms =
      "\"cluster\", \"storage\", {\"rack\": i}, {\"node\": i}, {\"gpu\": d}, {\"nic\": i} or "
      "{\"link\": \"node1_nic\"}";
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "cluster") return tg;
    if (s == "storage") {
      tg.kind = Kind::kStorage;
      return tg;
    }
    r.fail(key, "expected " + forms + ", got " + config::describe(v));
  }
  if (!v.is_object() || v.size() != 1)
    r.fail(key, "expected " + forms + ", got " + config::describe(v));
  config::JsonReader o = r.object(key);
  const std::string k = v.begin().key();
  auto index_in = [&](const char* what, int n) {
    std::int64_t i = o.non_negative_integer(k, 0);
    if (i >= n)
      o.fail(k, fmt::format("{} {} is not in topology {} ({}s {})", what, i, t.name, what,
                            range_text(n)));
    return static_cast<int>(i);
  };
  if (k == "rack") {
    tg.kind = Kind::kRack;
    tg.index = index_in("rack", t.racks());
  } else if (k == "node") {
    tg.kind = Kind::kNode;
    tg.index = index_in("node", t.nodes);
  } else if (k == "gpu") {
    tg.kind = Kind::kGpu;
    tg.index = index_in("gpu", t.total_gpus());
  } else if (k == "nic") {
    tg.kind = Kind::kNic;
    tg.index = index_in("nic", t.nodes);
  } else if (k == "link") {
    tg.kind = Kind::kLink;
    tg.link = o.string("link");
    std::string form;
    int idx = -1;
    const std::string hint = fmt::format(
        "links are gpu<D>_nvl (D in {}), node<i>_nic (i in {}){}, storage_link",
        range_text(t.total_gpus()), range_text(t.nodes),
        t.settings.gpu_direct_rdma ? ""
                                   : fmt::format(", node<i>_pcie (i in {})", range_text(t.nodes)));
    if (tg.link == "storage_link") {
      tg.index = -1;
    } else if (!parse_link_name(tg.link, &form, &idx)) {
      o.fail("link", fmt::format("unknown link \"{}\" in topology {}: {}", tg.link, t.name, hint));
    } else if (form == "gpu_nvl" && idx < t.total_gpus()) {
      tg.index = idx;
    } else if (form == "node_nic" && idx < t.nodes) {
      tg.index = idx;
    } else if (form == "node_pcie" && idx < t.nodes && !t.settings.gpu_direct_rdma) {
      tg.index = idx;
    } else {
      o.fail("link", fmt::format("link \"{}\" is not in topology {}: {}", tg.link, t.name, hint));
    }
  } else {
    r.fail(key, "expected " + forms + ", got " + config::describe(v));
  }
  o.finish();
  return tg;
}

// Which target kinds each type accepts.
bool target_allowed(FaultType ty, Kind k) {
  switch (ty) {
    case FaultType::kThermal:
      return k == Kind::kCluster || k == Kind::kRack || k == Kind::kNode;
    case FaultType::kLinkDegradation:
    case FaultType::kLinkDown:
      return k == Kind::kLink || k == Kind::kNic;
    case FaultType::kNodeFailure:
      return k == Kind::kNode || k == Kind::kRack;
    case FaultType::kGpuFailure:
    case FaultType::kUnresponsivePeer:
    case FaultType::kCorruptedShard:
      return k == Kind::kGpu;
    case FaultType::kStraggler:
      return k == Kind::kGpu || k == Kind::kNode;
    case FaultType::kNvlinkSaturation:
      return k == Kind::kNode || k == Kind::kCluster || k == Kind::kRack;
    case FaultType::kRdmaRegistration:
      return k == Kind::kNode || k == Kind::kCluster || k == Kind::kRack || k == Kind::kNic;
    case FaultType::kStorageSlowdown:
      return k == Kind::kStorage;
  }
  return false;
}

const char* allowed_targets(FaultType ty) {
  switch (ty) {
    case FaultType::kThermal:
      return "\"cluster\", {\"rack\": i} or {\"node\": i}";
    case FaultType::kLinkDegradation:
    case FaultType::kLinkDown:
      return "{\"link\": name} or {\"nic\": i}";
    case FaultType::kNodeFailure:
      return "{\"node\": i} or {\"rack\": i}";
    case FaultType::kGpuFailure:
    case FaultType::kUnresponsivePeer:
    case FaultType::kCorruptedShard:
      return "{\"gpu\": d}";
    case FaultType::kStraggler:
      return "{\"gpu\": d} or {\"node\": i}";
    case FaultType::kNvlinkSaturation:
      return "\"cluster\", {\"rack\": i} or {\"node\": i}";
    case FaultType::kRdmaRegistration:
      return "\"cluster\", {\"rack\": i}, {\"node\": i} or {\"nic\": i}";
    case FaultType::kStorageSlowdown:
      return "\"storage\"";
  }
  return "";
}

void parse_thermal(const config::JsonReader& r, ThermalSpec* th) {
  const config::Json& p = r.value("profile");
  if (!p.is_array() || p.empty())
    r.fail("profile", "expected a non-empty array of [offset_s, celsius] pairs");
  double last = -1;
  for (std::size_t i = 0; i < p.size(); ++i) {
    const auto& e = p[i];
    const std::string at = fmt::format("profile/{}", i);
    if (!e.is_array() || e.size() != 2 || !e[0].is_number() || !e[1].is_number())
      r.fail(at, "expected [offset_s, celsius], got " + config::describe(e));
    const double off = e[0].get<double>(), c = e[1].get<double>();
    if (off < 0 || (i > 0 && off <= last))
      r.fail(at, "offsets must be >= 0 and increasing, got " + config::describe(e));
    if (c < -50 || c > 150)
      r.fail(at, "temperature out of range [-50, 150] C: " + config::describe(e));
    last = off;
    th->profile.emplace_back(off, c);
  }
  th->nominal_c = r.number("nominal_c", th->nominal_c);
  th->drift_ppm_per_c = r.non_negative_number("drift_ppm_per_c", th->drift_ppm_per_c);
  th->drift_tolerance_ppm = r.non_negative_number("drift_tolerance_ppm", th->drift_tolerance_ppm);
  th->retransmit_per_ppm = r.non_negative_number("retransmit_per_ppm", th->retransmit_per_ppm);
  th->max_retransmit_rate = r.fraction("max_retransmit_rate", th->max_retransmit_rate);
  if (th->max_retransmit_rate >= 1) r.fail("max_retransmit_rate", "expected a number in [0, 1)");
  th->retransmit_timeout_s = r.duration_s("retransmit_timeout", th->retransmit_timeout_s);
  if (th->retransmit_timeout_s < 0) r.fail("retransmit_timeout", "expected a duration >= 0");
  if (r.has("ack_timeout")) {
    th->ack_timeout_s = r.duration_s("ack_timeout");
    if (th->ack_timeout_s < 0) r.fail("ack_timeout", "expected a duration >= 0");
  }
  th->gpu_load_rise_c = r.non_negative_number("gpu_load_rise_c", th->gpu_load_rise_c);
  th->gpu_throttle_c = r.number("gpu_throttle_c", th->gpu_throttle_c);
  th->throttle_per_c = r.fraction("throttle_per_c", th->throttle_per_c);
  th->update_s = r.duration_s("update", th->update_s);
  if (th->update_s <= 0) r.fail("update", "expected a duration > 0");
}

void parse_params(const config::JsonReader& r, FaultSpec* f) {
  auto open_fraction = [&](const char* key, double def) {
    double v = r.fraction(key, def);
    if (v <= 0) r.fail(key, "expected a number in (0, 1]");
    return v;
  };
  switch (f->type) {
    case FaultType::kThermal:
      parse_thermal(r, &f->thermal);
      break;
    case FaultType::kLinkDegradation:
      f->bandwidth_factor = open_fraction("bandwidth_factor", f->bandwidth_factor);
      f->latency_factor = r.number("latency_factor", f->latency_factor);
      if (f->latency_factor < 1) r.fail("latency_factor", "expected a number >= 1");
      if (f->bandwidth_factor == 1 && f->latency_factor == 1)
        r.fail_here("a link_degradation needs bandwidth_factor < 1 or latency_factor > 1");
      break;
    case FaultType::kStraggler:
      f->speed_factor = open_fraction("speed_factor", 0.5);
      break;
    case FaultType::kNvlinkSaturation:
      f->share = r.fraction("share", f->share);
      if (f->share >= 1) r.fail("share", "expected a number in [0, 1): the job's share of NVLink");
      break;
    case FaultType::kRdmaRegistration:
      f->failure_rate = r.fraction("failure_rate", f->failure_rate);
      f->retry_s = r.duration_s("retry", f->retry_s);
      if (f->retry_s < 0) r.fail("retry", "expected a duration >= 0");
      f->max_retries = static_cast<int>(r.non_negative_integer("max_retries", f->max_retries));
      if (f->max_retries > 1000) r.fail("max_retries", "expected at most 1000");
      f->registration_cost_s = r.duration_s("registration_cost", f->registration_cost_s);
      if (f->registration_cost_s < 0) r.fail("registration_cost", "expected a duration >= 0");
      break;
    case FaultType::kUnresponsivePeer:
      f->stall_s = r.duration_s("stall", f->stall_s);
      if (f->stall_s <= 0) r.fail("stall", "expected a duration > 0");
      break;
    case FaultType::kStorageSlowdown:
      f->bandwidth_factor = open_fraction("bandwidth_factor", 0.1);
      break;
    case FaultType::kLinkDown:
    case FaultType::kNodeFailure:
    case FaultType::kGpuFailure:
    case FaultType::kCorruptedShard:
      break;
  }
}

// Elements a fault acts on, as strings, for overlap checks ("node:1", "gpu:3", "link:x").
std::set<std::string> elements(const FaultSpec& f, const plan::Topology& t) {
  std::set<std::string> out;
  const auto& tg = f.target;
  switch (tg.kind) {
    case Kind::kLink:
      out.insert("link:" + tg.link);
      break;
    case Kind::kNic:
      out.insert(fmt::format("link:node{}_nic", tg.index));
      break;
    case Kind::kStorage:
      out.insert("storage");
      break;
    case Kind::kGpu:
      out.insert(fmt::format("gpu:{}", tg.index));
      break;
    default:
      for (int n : tg.nodes(t)) out.insert(fmt::format("node:{}", n));
  }
  return out;
}

}  // namespace

const std::vector<std::string>& fault_type_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& t : kTypes) v.emplace_back(t.name);
    return v;
  }();
  return names;
}

const char* fault_type_name(FaultType t) {
  for (const auto& e : kTypes)
    if (e.type == t) return e.name;
  return "?";
}

std::vector<int> FaultTarget::nodes(const plan::Topology& t) const {
  std::vector<int> out;
  switch (kind) {
    case Kind::kCluster:
      for (int n = 0; n < t.nodes; ++n) out.push_back(n);
      break;
    case Kind::kRack:
      for (int n = index * t.rack_size(); n < std::min(t.nodes, (index + 1) * t.rack_size()); ++n)
        out.push_back(n);
      break;
    case Kind::kNode:
    case Kind::kNic:
      out.push_back(index);
      break;
    case Kind::kGpu:
      out.push_back(t.node_of(index));
      break;
    case Kind::kLink:
      if (link.rfind("gpu", 0) == 0) out.push_back(t.node_of(index));
      if (link.rfind("node", 0) == 0) out.push_back(index);
      break;
    case Kind::kStorage:
      break;
  }
  return out;
}

std::vector<DeviceId> FaultTarget::gpus(const plan::Topology& t) const {
  std::vector<DeviceId> out;
  if (kind == Kind::kGpu) return {index};
  if (kind != Kind::kCluster && kind != Kind::kRack && kind != Kind::kNode) return out;
  for (int n : nodes(t))
    for (int g = 0; g < t.node.gpus; ++g) out.push_back(n * t.node.gpus + g);
  return out;
}

std::string FaultTarget::describe() const {
  switch (kind) {
    case Kind::kCluster:
      return "cluster";
    case Kind::kRack:
      return fmt::format("rack {}", index);
    case Kind::kNode:
      return fmt::format("node {}", index);
    case Kind::kGpu:
      return fmt::format("gpu {}", index);
    case Kind::kNic:
      return fmt::format("link node{}_nic", index);
    case Kind::kLink:
      return "link " + link;
    case Kind::kStorage:
      return "storage";
  }
  return "?";
}

std::string FaultSpec::label(int index) const {
  return name.empty() ? fmt::format("{}#{}", fault_type_name(type), index) : name;
}

std::vector<FaultSpec> parse_faults(const config::JsonReader& root, const plan::Topology& t,
                                    double duration_s, double run_end_s) {
  std::vector<FaultSpec> out;
  if (!root.has("faults")) {
    root.consume("faults");
    return out;
  }
  std::vector<config::JsonReader> entries = root.objects("faults");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    const config::JsonReader& r = entries[i];
    FaultSpec f;
    f.name = r.string("name", "");
    std::string ty = r.one_of("type", fault_type_names());
    for (const auto& e : kTypes)
      if (ty == e.name) f.type = e.type;
    f.target = parse_target(r, t);
    if (!target_allowed(f.type, f.target.kind))
      r.fail("target", fmt::format("a {} fault takes {}, got {}", ty, allowed_targets(f.type),
                                   f.target.describe()));
    f.start_s = r.duration_s("start", 0);
    if (f.start_s < 0 || f.start_s >= duration_s)
      r.fail("start", fmt::format("{} s is outside the run's arrival window [0, {} s)", f.start_s,
                                  duration_s));
    if (f.type == FaultType::kCorruptedShard) {
      if (f.start_s != 0) r.fail("start", "a corrupted_shard is found when weights load: start 0");
      if (r.has("duration")) r.fail("duration", "a corrupted_shard has no duration");
    } else if (r.has("duration")) {
      const double d = r.duration_s("duration");
      if (d <= 0)
        r.fail("duration", "expected a duration > 0 (omit it for a fault that never ends)");
      f.end_s = f.start_s + d;
      if (f.end_s > run_end_s)
        r.fail("duration", fmt::format("the fault ends at {} s, after the run's end ({} s = "
                                       "duration + max_drain)",
                                       f.end_s, run_end_s));
    }
    parse_params(r, &f);
    r.finish();
    out.push_back(std::move(f));
  }
  // Overlaps without one meaning: two thermal faults on a node at once, or two faults of the
  // same type on the same element at once.
  for (std::size_t a = 0; a < out.size(); ++a) {
    const auto ea = elements(out[a], t);
    for (std::size_t b = a + 1; b < out.size(); ++b) {
      if (out[a].type != out[b].type) continue;
      if (!(out[a].start_s < out[b].end_s && out[b].start_s < out[a].end_s)) continue;
      const auto eb = elements(out[b], t);
      for (const auto& e : ea) {
        if (!eb.count(e)) continue;
        entries[b].fail_here(fmt::format(
            "overlaps /faults/{} ({} on {}): two {} faults cannot act on {} at the same time; "
            "merge them into one entry or make their windows disjoint",
            a, out[a].label(static_cast<int>(a)), out[a].target.describe(),
            fault_type_name(out[b].type), e));
      }
    }
  }
  return out;
}

CommEnv parse_env(const config::JsonReader& root) {
  CommEnv env;
  auto r = root.optional_object("env");
  if (!r) return env;
  for (auto it = r->json().begin(); it != r->json().end(); ++it) {
    const std::string& k = it.key();
    if (k != "NCCL_TIMEOUT" && k != "UCX_MEMTYPE_CACHE" && k != "NCCL_IB_TIMEOUT")
      r->fail(k,
              "unknown variable; known: NCCL_TIMEOUT (seconds), NCCL_IB_TIMEOUT (1-31), "
              "UCX_MEMTYPE_CACHE (y|n)");
  }
  if (r->has("NCCL_TIMEOUT")) {
    const config::Json& v = r->value("NCCL_TIMEOUT");
    double s = -1;
    if (v.is_number()) s = v.get<double>();
    if (v.is_string()) {
      const std::string text = v.get<std::string>();
      if (!config::parse_duration_s(text, &s)) s = -1;
    }
    if (!(s > 0)) r->fail("NCCL_TIMEOUT", "expected seconds > 0, got " + config::describe(v));
    env.collective_timeout_s = s;
  }
  if (r->has("NCCL_IB_TIMEOUT")) {
    const config::Json& v = r->value("NCCL_IB_TIMEOUT");
    int t = -1;
    if (v.is_number_integer()) t = v.get<int>();
    if (v.is_string()) {
      const std::string text = v.get<std::string>();
      if (!text.empty() && text.size() <= 2 &&
          text.find_first_not_of("0123456789") == std::string::npos)
        t = std::stoi(text);
    }
    if (t < 1 || t > 31)
      r->fail("NCCL_IB_TIMEOUT", "expected an integer 1-31 (ACK timeout 4.096 us x 2^t), got " +
                                     config::describe(v));
    env.ib_timeout = t;
  }
  if (r->has("UCX_MEMTYPE_CACHE")) {
    std::string v = r->one_of("UCX_MEMTYPE_CACHE", {"y", "n", "yes", "no", "1", "0"});
    env.ucx_memtype_cache = v == "y" || v == "yes" || v == "1";
  }
  r->finish();
  return env;
}

}  // namespace prima::faults
