// Parsing and validation of GPU specs (topologies/gpus.json) and cluster topologies
// (topologies/*.json); schema in docs/topologies.md.
#include "engine/plan/topology.h"

#include <filesystem>
#include <map>

#include "engine/config/embedded.h"

namespace prima::plan {
namespace {

using config::Json;
using config::JsonReader;

const char kGpusFile[] = "topologies/gpus.json";
const char kPricesFile[] = "topologies/prices.json";  // engine/capacity/price_table.h

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

GpuSpec parse_gpu(const JsonReader& r, const std::string& name) {
  GpuSpec g;
  g.name = name;
  g.source = r.string("source");
  g.hbm_bytes = r.bytes("memory");
  g.hbm_bw_Bps = r.bandwidth_Bps("hbm_bandwidth");
  g.fp16_flops = r.positive_number("fp16_tflops") * 1e12;
  g.bf16_flops = r.positive_number("bf16_tflops", g.fp16_flops / 1e12) * 1e12;
  g.int8_ops = r.positive_number("int8_tops", 2 * g.fp16_flops / 1e12) * 1e12;
  g.fp8_flops = r.non_negative_number("fp8_tflops", 0) * 1e12;
  g.sms = static_cast<int>(r.non_negative_integer("sms", 0));
  r.finish();
  return g;
}

std::map<std::string, GpuSpec> parse_gpu_table(const Json& j, const std::string& file) {
  std::map<std::string, GpuSpec> t;
  JsonReader root(j, file);
  root.string("description", "");
  JsonReader gpus = root.object("gpus");
  for (auto it = gpus.json().begin(); it != gpus.json().end(); ++it)
    t[it.key()] = parse_gpu(gpus.object(it.key()), it.key());
  gpus.finish();
  root.finish();
  return t;
}

// All GPUs of the embedded gpus.json, parsed once (immutable afterwards).
const std::map<std::string, GpuSpec>& gpu_table() {
  static const std::map<std::string, GpuSpec> kTable = [] {
    auto text = config::embedded_file(kGpusFile);
    if (!text) throw config::ConfigError(std::string(kGpusFile) + ": not embedded in the binary");
    auto j = config::parse_json_text(std::string(*text), kGpusFile);
    if (!j.ok()) throw config::ConfigError(j.status().message());
    return parse_gpu_table(*j, kGpusFile);
  }();
  return kTable;
}

LinkSpec parse_link(const JsonReader& r) {
  LinkSpec l;
  l.bandwidth_Bps = r.bandwidth_Bps("bandwidth");
  l.latency_s = r.duration_s("latency", 0);
  r.string("source", "");
  r.finish();
  return l;
}

bool parse_switch(const JsonReader& r, const std::string& key, bool def) {
  if (!r.has(key)) {
    r.consume(key);
    return def;
  }
  const Json& v = r.value(key);
  if (v.is_boolean()) return v.get<bool>();
  if (v.is_number_integer() && (v.get<int>() == 0 || v.get<int>() == 1)) return v.get<int>() == 1;
  r.fail(key, "expected 0, 1, true or false, got " + config::describe(v));
}

std::vector<int> int_list(const JsonReader& r, const std::string& key) {
  std::vector<int> out;
  if (!r.has(key)) {
    r.consume(key);
    return out;
  }
  for (double d : r.numbers(key)) {
    if (d < 1 || d != static_cast<int>(d)) r.fail(key, "expected positive integers");
    out.push_back(static_cast<int>(d));
  }
  return out;
}

// Text of a topology given by name (embedded) or path; the second member names it in messages.
std::optional<std::pair<std::string, std::string>> topology_text(const std::string& ref) {
  const std::string embedded = "topologies/" + ref + ".json";
  if (auto t = config::embedded_file(embedded)) return std::make_pair(std::string(*t), embedded);
  std::error_code ec;
  if (std::filesystem::is_regular_file(ref, ec)) {
    auto j = config::read_json_file(ref);
    if (!j.ok()) throw config::ConfigError(j.status().message());
    return std::make_pair(j->dump(), ref);
  }
  return std::nullopt;
}

Topology parse_by_reference(const JsonReader& r, const std::string& key, const std::string& ref) {
  auto text = topology_text(ref);
  if (!text)
    r.fail(key, "unknown topology \"" + ref + "\"; built-in topologies: " + join(topology_names()) +
                    " (or give a path to a JSON file, or an object)");
  auto j = config::parse_json_text(text->first, text->second);
  if (!j.ok()) r.fail(key, j.status().message());
  if (!j->is_object()) r.fail(key, text->second + ": expected a JSON object");
  return parse_topology(JsonReader(*j, text->second));
}

}  // namespace

Result<GpuSpec> gpu_by_name(const std::string& name) {
  try {
    const auto& t = gpu_table();
    auto it = t.find(name);
    if (it == t.end())
      return not_found("unknown GPU \"" + name + "\"; known GPUs (" + kGpusFile +
                       "): " + join(gpu_names()));
    return it->second;
  } catch (const std::exception& e) {
    return internal_error(e.what());
  }
}

std::vector<std::string> gpu_names() {
  std::vector<std::string> names;
  for (const auto& [name, spec] : gpu_table()) names.push_back(name);
  return names;
}

Topology parse_topology(const JsonReader& r) {
  if (r.has("base")) {
    // {"base": "bitbrick_k1", "nodes": 16, ...}: the other fields patch the base (RFC 7386).
    const std::string ref = r.string("base");
    auto text = topology_text(ref);
    if (!text)
      r.fail("base",
             "unknown topology \"" + ref + "\"; built-in topologies: " + join(topology_names()));
    auto base = config::parse_json_text(text->first, text->second);
    if (!base.ok()) r.fail("base", base.status().message());
    Json patch = r.json();
    patch.erase("base");
    for (auto it = patch.begin(); it != patch.end(); ++it) r.consume(it.key());
    Json merged = *base;
    merged.merge_patch(patch);
    return parse_topology(JsonReader(merged, r.file() + " (base " + text->second + ")", r.path()));
  }
  Topology t;
  t.name = r.string("name");
  t.description = r.string("description", "");
  r.string("source", "");
  const Json& gpu = r.value("gpu");
  if (gpu.is_string()) {
    auto g = gpu_by_name(gpu.get<std::string>());
    if (!g.ok()) r.fail("gpu", g.status().message());
    t.gpu = *g;
  } else if (gpu.is_object()) {
    JsonReader g = r.object("gpu");
    t.gpu = parse_gpu(g, g.string("name"));
  } else {
    r.fail("gpu", "expected a GPU name (" + join(gpu_names()) + ") or an object, got " +
                      config::describe(gpu));
  }
  t.nodes = static_cast<int>(r.positive_integer("nodes"));
  t.nodes_per_rack = static_cast<int>(r.non_negative_integer("nodes_per_rack", 0));
  if (r.has("node_gpus")) {
    const auto groups = r.objects("node_gpus");
    int others = 0;
    for (const JsonReader& g : groups) {
      Topology::NodeGroup ng;
      auto spec = gpu_by_name(g.string("gpu"));
      if (!spec.ok()) g.fail("gpu", spec.status().message());
      ng.gpu = *spec;
      ng.nodes = static_cast<int>(g.positive_integer("nodes"));
      g.finish();
      others += ng.nodes;
      t.node_gpus.push_back(ng);
    }
    if (others >= t.nodes)
      r.fail("node_gpus", "the groups hold " + std::to_string(others) + " of the " +
                              std::to_string(t.nodes) + " nodes; at least one node keeps \"gpu\"");
  }

  JsonReader n = r.object("node");
  t.node.gpus = static_cast<int>(n.positive_integer("gpus"));
  t.node.cpu = n.string("cpu", "");
  n.string("source", "");
  t.node.host_memory_bytes = n.bytes("host_memory", 0);
  t.node.host_memory_bw_Bps = n.bandwidth_Bps("host_memory_bandwidth", 0);
  t.node.nvlink = parse_link(n.object("nvlink"));
  t.node.pcie = parse_link(n.object("pcie"));
  t.node.nic = parse_link(n.object("nic"));
  n.finish();

  JsonReader f = r.object("fabric");
  t.fabric.type = f.one_of("type", {"fat_tree"}, "fat_tree");
  t.fabric.link = parse_link(f.object("link"));
  t.fabric.levels = static_cast<int>(f.non_negative_integer("levels", 0));
  t.fabric.down = int_list(f, "down");
  t.fabric.up = int_list(f, "up");
  t.fabric.count = int_list(f, "count");
  f.string("source", "");
  f.finish();

  if (auto s = r.optional_object("storage")) {
    t.storage.type = s->string("type");
    t.storage.read_bandwidth_Bps = s->bandwidth_Bps("read_bandwidth");
    t.storage.latency_s = s->duration_s("latency", 0);
    s->string("source", "");
    s->finish();
  }
  if (auto s = r.optional_object("settings")) {
    t.settings.rdma = parse_switch(*s, "rdma.enable", true);
    t.settings.gpu_direct_rdma = parse_switch(*s, "gpu_direct_rdma", true);
    t.settings.numa_aware = parse_switch(*s, "numa_aware", true);
    s->finish();
  }
  r.finish();
  Status st = t.validate();
  if (!st.ok()) r.fail_here(st.message());
  return t;
}

std::vector<int> Topology::nodes_with(const std::string& gpu_name) const {
  std::vector<int> out;
  int others = 0;
  for (const NodeGroup& g : node_gpus) others += g.nodes;
  int first = nodes - others;
  if (gpu.name == gpu_name)
    for (int n = 0; n < first; ++n) out.push_back(n);
  for (const NodeGroup& g : node_gpus) {
    if (g.gpu.name == gpu_name)
      for (int n = first; n < first + g.nodes; ++n) out.push_back(n);
    first += g.nodes;
  }
  return out;
}

const GpuSpec* Topology::gpu_type(const std::string& gpu_name) const {
  if (gpu.name == gpu_name) return &gpu;
  for (const NodeGroup& g : node_gpus)
    if (g.gpu.name == gpu_name) return &g.gpu;
  return nullptr;
}

std::string Topology::gpu_types() const {
  std::string s = gpu.name;
  for (const NodeGroup& g : node_gpus) s += ", " + g.gpu.name;
  return s;
}

Topology resolve_topology(const JsonReader& parent, const std::string& key) {
  const Json& v = parent.value(key);
  if (v.is_string()) return parse_by_reference(parent, key, v.get<std::string>());
  if (!v.is_object())
    parent.fail(key, "expected a topology name (" + join(topology_names()) +
                         "), a path to a JSON file, or an object, got " + config::describe(v));
  return parse_topology(parent.object(key));
}

Result<std::map<std::string, GpuSpec>> parse_gpu_specs(const Json& j, const std::string& file) {
  std::map<std::string, GpuSpec> t;
  PRIMA_RETURN_IF_ERROR(config::to_status([&] { t = parse_gpu_table(j, file); }));
  return t;
}

std::vector<std::string> topology_names() {
  std::vector<std::string> names;
  const std::string prefix = "topologies/", suffix = ".json";
  for (const auto& f : config::embedded_files()) {
    std::string p = f.path;
    if (p.rfind(prefix, 0) != 0 || p.size() <= prefix.size() + suffix.size()) continue;
    if (p.compare(p.size() - suffix.size(), suffix.size(), suffix) != 0) continue;
    if (p == kGpusFile || p == kPricesFile) continue;  // GPU specs, prices: not topologies
    if (p.find('/', prefix.size()) != std::string::npos) continue;  // profiles/: not topologies
    names.push_back(p.substr(prefix.size(), p.size() - prefix.size() - suffix.size()));
  }
  return names;
}

}  // namespace prima::plan
