// Engine profiles: parsing, writing, the built-in engines and a scenario's choice of one
// (engine_profile.h).
#include "engine/perf/engine_profile.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>

#include "engine/config/embedded.h"
#include "engine/config/json_parse.h"
#include "engine/plan/topology.h"

namespace prima::perf {
namespace {

namespace fs = std::filesystem;
using config::Json;
using config::JsonReader;

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

ErrorSummary parse_summary(const JsonReader& r) {
  ErrorSummary e;
  e.points = static_cast<int>(r.non_negative_integer("points", 0));
  e.median_abs_error = r.number("median_abs_error", -1);
  e.max_abs_error = r.number("max_abs_error", -1);
  r.finish();
  return e;
}

Json summary_json(const ErrorSummary& e) {
  auto opt = [](double v) { return v >= 0 ? Json(v) : Json(nullptr); };
  return {{"points", e.points},
          {"median_abs_error", opt(e.median_abs_error)},
          {"max_abs_error", opt(e.max_abs_error)}};
}

EngineFidelity parse_engine_fidelity(const JsonReader& r) {
  EngineFidelity f;
  if (r.has("sources")) f.sources = r.strings("sources");
  if (auto o = r.optional_object("out_of_sample")) f.out_of_sample = parse_summary(*o);
  if (auto m = r.optional_object("out_of_sample_by_metric")) {
    for (auto it = m->json().begin(); it != m->json().end(); ++it)
      f.out_of_sample_by_metric[it.key()] = parse_summary(m->object(it.key()));
    m->finish();
  }
  if (auto o = r.optional_object("in_sample")) f.in_sample = parse_summary(*o);
  if (auto g = r.optional_object("range")) {
    f.min_params_b = g->non_negative_number("min_params_b", 0);
    f.max_params_b = g->non_negative_number("max_params_b", 0);
    f.min_tp = static_cast<int>(g->non_negative_integer("min_tp", 0));
    f.max_tp = static_cast<int>(g->non_negative_integer("max_tp", 0));
    f.max_batch = static_cast<int>(g->non_negative_integer("max_batch", 0));
    f.max_context = static_cast<int>(g->non_negative_integer("max_context", 0));
    g->finish();
  }
  r.finish();
  return f;
}

// The engine-axis terms of an object: a hardware term is an error naming the axis that owns
// it; every value is checked for physical sense.
Efficiency parse_terms(const JsonReader& r, Efficiency e) {
  for (const EfficiencyField& f : efficiency_fields()) {
    if (!r.has(f.name)) continue;
    if (f.axis != Axis::kEngine)
      r.fail(f.name, std::string(f.name) +
                         " is a hardware term (the hardware axis owns it): set it in the "
                         "hardware profile or the scenario's \"calibration\", not in an engine "
                         "profile");
    double& v = e.*f.member;
    v = f.kind == EfficiencyField::kSeconds ? r.duration_s(f.name) : r.number(f.name);
    if (!(v >= 0) || !std::isfinite(v)) r.fail(f.name, fmt::format("expected >= 0, got {}", v));
  }
  r.finish();
  return e;
}

void parse_scheduler_fields(const JsonReader& r, EngineScheduler* s) {
  s->max_num_seqs = static_cast<int>(r.positive_integer("max_num_seqs", s->max_num_seqs));
  s->max_num_batched_tokens =
      static_cast<int>(r.positive_integer("max_num_batched_tokens", s->max_num_batched_tokens));
  s->chunked_prefill = r.boolean("chunked_prefill", s->chunked_prefill);
  s->mixed_batches = r.boolean("mixed_batches", s->mixed_batches);
  s->overlap_schedule = r.boolean("overlap_schedule", s->overlap_schedule);
  s->prefix_caching = r.boolean("enable_prefix_caching", s->prefix_caching);
  s->guaranteed_no_evict =
      r.one_of("capacity_policy", {"max_utilization", "guaranteed_no_evict"},
               s->guaranteed_no_evict ? "guaranteed_no_evict" : "max_utilization") ==
      "guaranteed_no_evict";
}

// "scheduler": the defaults, and "gpus": {GPU type: the fields that differ there}. A field set
// here also replaces a base profile's value for each of its GPU types.
void parse_scheduler(const JsonReader& r, EngineProfile* e) {
  parse_scheduler_fields(r, &e->scheduler);
  for (auto& [gpu, s] : e->scheduler_per_gpu) parse_scheduler_fields(r, &s);
  if (auto g = r.optional_object("gpus")) {
    for (auto it = g->json().begin(); it != g->json().end(); ++it) {
      if (!plan::gpu_by_name(it.key()).ok())
        g->fail(it.key(), "unknown GPU type \"" + it.key() + "\" (topologies/gpus.json)");
      const JsonReader one = g->object(it.key());
      EngineScheduler s = e->scheduler_for(it.key());
      parse_scheduler_fields(one, &s);
      one.finish();
      e->scheduler_per_gpu[it.key()] = s;
    }
    g->finish();
  }
  r.finish();
}

Json scheduler_json(const EngineScheduler& s) {
  Json j = {{"max_num_seqs", s.max_num_seqs},
            {"max_num_batched_tokens", s.max_num_batched_tokens},
            {"chunked_prefill", s.chunked_prefill}};
  // Written where they are not the default.
  if (!s.mixed_batches) j["mixed_batches"] = false;
  if (s.overlap_schedule) j["overlap_schedule"] = true;
  if (s.prefix_caching) j["enable_prefix_caching"] = true;
  if (s.guaranteed_no_evict) j["capacity_policy"] = "guaranteed_no_evict";
  return j;
}

void parse_kv(const JsonReader& r, KvSizing* k) {
  k->memory_utilization = r.fraction("memory_utilization", k->memory_utilization);
  if (!(k->memory_utilization > 0))
    r.fail("memory_utilization", "expected a share of the GPU's memory in (0, 1]");
  k->of_free = r.one_of("of", {"total", "free"}, k->of_free ? "free" : "total") == "free";
  k->reserved_bytes = r.bytes("reserved", k->reserved_bytes);
  if (k->reserved_bytes < 0) r.fail("reserved", "expected bytes >= 0");
  r.finish();
}

Json terms_json(const Efficiency& e) {
  Json j = Json::object();
  for (const EfficiencyField& f : efficiency_fields())
    if (f.axis == Axis::kEngine) j[f.name] = e.*f.member;
  return j;
}

const std::map<std::string, EngineProfile>& builtin_engines() {
  static const std::map<std::string, EngineProfile> engines = [] {
    std::map<std::string, EngineProfile> m;
    // The uncalibrated engine of "calibration": "roofline": the cost model's default terms.
    EngineProfile generic;
    generic.name = kRooflineEngine;
    generic.description = "the cost model's default engine terms (uncalibrated)";
    generic.source = "defaults of perf::Efficiency";
    m[generic.name] = generic;
    for (const auto& f : config::embedded_files()) {
      const std::string path = f.path;
      if (path.rfind("topologies/engines/", 0) != 0) continue;
      auto j = config::parse_json_text(f.content, path);
      if (!j.ok() || !j->is_object()) continue;
      // An embedded profile that does not parse is a build defect; EngineProfiles.BuiltinsParse
      // loads each.
      Status st = config::to_status([&] {
        EngineProfile e = parse_engine_profile(JsonReader(*j, path));
        m[e.name] = e;
      });
      (void)st;
    }
    return m;
  }();
  return engines;
}

// Where the run leaves the range the engine's points cover, and by how much.
std::vector<std::string> out_of_range(const EngineFidelity& f, const RunFacts& x) {
  std::vector<std::string> v;
  if (f.max_params_b > 0 && x.params_b > 1.5 * f.max_params_b)
    v.push_back(fmt::format("a {:.0f}B-parameter model is {:.1f}x the largest calibrated ({:.0f}B)",
                            x.params_b, x.params_b / f.max_params_b, f.max_params_b));
  if (f.min_params_b > 0 && x.params_b > 0 && x.params_b < f.min_params_b / 1.5)
    v.push_back(
        fmt::format("a {:.1f}B-parameter model is smaller than the smallest calibrated "
                    "({:.1f}B)",
                    x.params_b, f.min_params_b));
  if (f.max_tp > 0 && x.tensor_parallel > f.max_tp)
    v.push_back(fmt::format("TP {} is beyond the calibrated TP {}-{}", x.tensor_parallel, f.min_tp,
                            f.max_tp));
  if (f.max_batch > 0 && x.max_batch > 2 * f.max_batch)
    v.push_back(fmt::format("a batch of up to {} is {:.1f}x the largest calibrated ({})",
                            x.max_batch, double(x.max_batch) / f.max_batch, f.max_batch));
  if (f.max_context > 0 && x.max_context > 2 * f.max_context)
    v.push_back(fmt::format("contexts of up to {} tokens are {:.1f}x the longest calibrated ({})",
                            x.max_context, double(x.max_context) / f.max_context, f.max_context));
  return v;
}

std::string pct(double v) {
  return v >= 0 ? fmt::format("{:.1f}%", v * 100) : "?";
}

}  // namespace

Json trust_json(const Resolved& r, const std::string& gpu, const RunFacts* facts) {
  const EngineProfile* e = r.engine.get();
  const std::string engine = e ? e->name : kRooflineEngine;
  const Fidelity& hw = r.fidelity;
  Json j = {{"engine", engine},
            {"engine_description", e ? e->description : ""},
            {"hardware_profile", hw.calibrated ? Json(hw.profile) : Json(nullptr)},
            {"source", hw.source}};
  Json h = {{"calibrated", hw.calibrated}, {"source", hw.source}};
  if (hw.calibrated) {
    h["calibration_data"] = hw.calibration_data;
    h["points"] = hw.points;
    h["median_abs_error"] = hw.median_abs_error;
    h["max_abs_error"] = hw.max_abs_error;
  }
  j["hardware"] = h;
  const EngineFidelity* f = nullptr;
  if (e) {
    auto it = e->fidelity.find(gpu);
    if (it != e->fidelity.end() && it->second.out_of_sample.points > 0) f = &it->second;
  }
  std::string summary;
  if (!hw.calibrated && engine == kRooflineEngine) {
    j["calibrated"] = false;
    summary = "roofline only, uncalibrated";
  } else if (!f) {
    j["calibrated"] = false;
    summary = fmt::format(
        "engine {} on {}: no published measurement of this engine on this GPU "
        "in its calibration data; the error is unknown",
        engine, gpu);
  } else {
    j["calibrated"] = true;
    j["error_kind"] = "out-of-sample: each source predicted by a fit to the others";
    j["points"] = f->out_of_sample.points;
    j["sources"] = f->sources;
    j["median_abs_error"] = f->out_of_sample.median_abs_error;
    j["max_abs_error"] = f->out_of_sample.max_abs_error;
    Json by = Json::object();
    for (const auto& [m, s] : f->out_of_sample_by_metric) by[m] = summary_json(s);
    j["by_metric"] = by;
    j["in_sample"] = summary_json(f->in_sample);
    j["range"] = engine_fidelity_to_json(*f)["range"];
    summary = fmt::format(
        "engine {} on {}: out-of-sample error median {}, max {} over {} points of {} sources "
        "(in-sample fit: median {})",
        engine, gpu, pct(f->out_of_sample.median_abs_error), pct(f->out_of_sample.max_abs_error),
        f->out_of_sample.points, f->sources.size(), pct(f->in_sample.median_abs_error));
    if (facts) {
      const auto warnings = out_of_range(*f, *facts);
      j["out_of_range"] = warnings;
      for (const auto& w : warnings) summary += "; outside the calibrated range: " + w;
    }
  }
  if (hw.calibrated)
    summary += fmt::format("; hardware profile {}: median {} on {} microbenchmarks", hw.profile,
                           pct(hw.median_abs_error), hw.points);
  j["summary"] = summary;
  return j;
}

const EngineScheduler& EngineProfile::scheduler_for(const std::string& gpu) const {
  auto it = scheduler_per_gpu.find(gpu);
  return it == scheduler_per_gpu.end() ? scheduler : it->second;
}

const Efficiency& EngineProfile::terms_for(const std::string& gpu) const {
  auto it = per_gpu.find(gpu);
  return it == per_gpu.end() ? terms : it->second;
}

Efficiency merge_axes(const Efficiency& hardware, const EngineProfile& engine,
                      const std::string& gpu) {
  Efficiency e = hardware;
  const Efficiency& t = engine.terms_for(gpu);
  for (const EfficiencyField& f : efficiency_fields())
    if (f.axis == Axis::kEngine) e.*f.member = t.*f.member;
  return e;
}

EngineProfile parse_engine_profile(const JsonReader& r) {
  EngineProfile e;
  if (r.has("base")) {
    const std::string base = r.string("base");
    const EngineProfile* b = builtin_engine(base);
    if (!b)
      r.fail("base",
             "unknown engine \"" + base + "\" (known: " + join(builtin_engine_names()) + ")");
    e = *b;
    e.fidelity.clear();  // a modified engine has not been measured
    e.name = base + " (modified)";
  }
  e.name = r.string("engine", e.name);
  if (e.name.empty()) r.fail("engine", "expected the engine's name, e.g. \"vllm\"");
  e.description = r.string("description", e.description);
  e.source = r.string("source", e.source);
  if (auto t = r.optional_object("terms")) e.terms = parse_terms(*t, e.terms);
  if (auto g = r.optional_object("gpus")) {
    for (auto it = g->json().begin(); it != g->json().end(); ++it)
      e.per_gpu[it.key()] = parse_terms(g->object(it.key()), e.terms_for(it.key()));
    g->finish();
  }
  if (auto s = r.optional_object("scheduler")) parse_scheduler(*s, &e);
  if (auto k = r.optional_object("kv_cache")) parse_kv(*k, &e.kv);
  if (auto f = r.optional_object("fidelity")) {
    for (auto it = f->json().begin(); it != f->json().end(); ++it)
      e.fidelity[it.key()] = parse_engine_fidelity(f->object(it.key()));
    f->finish();
  }
  r.finish();
  return e;
}

Result<EngineProfile> load_engine_profile_file(const std::string& path) {
  PRIMA_ASSIGN_OR_RETURN(Json j, config::read_json_file(path));
  EngineProfile e;
  Status st = config::to_status([&] {
    if (!j.is_object()) throw config::ConfigError(path + ": expected a JSON object");
    e = parse_engine_profile(JsonReader(j, path));
  });
  if (!st.ok()) return st;
  return e;
}

Json engine_fidelity_to_json(const EngineFidelity& f) {
  Json by = Json::object();
  for (const auto& [m, s] : f.out_of_sample_by_metric) by[m] = summary_json(s);
  return {{"sources", f.sources},
          {"out_of_sample", summary_json(f.out_of_sample)},
          {"out_of_sample_by_metric", by},
          {"in_sample", summary_json(f.in_sample)},
          {"range",
           {{"min_params_b", f.min_params_b},
            {"max_params_b", f.max_params_b},
            {"min_tp", f.min_tp},
            {"max_tp", f.max_tp},
            {"max_batch", f.max_batch},
            {"max_context", f.max_context}}}};
}

Json engine_profile_to_json(const EngineProfile& e) {
  Json j = {{"engine", e.name},
            {"description", e.description},
            {"source", e.source},
            {"terms", terms_json(e.terms)},
            {"scheduler", scheduler_json(e.scheduler)},
            {"kv_cache",
             {{"memory_utilization", e.kv.memory_utilization},
              {"of", e.kv.of_free ? "free" : "total"},
              {"reserved", e.kv.reserved_bytes}}}};
  if (!e.scheduler_per_gpu.empty()) {
    Json g = Json::object();
    for (const auto& [gpu, x] : e.scheduler_per_gpu) g[gpu] = scheduler_json(x);
    j["scheduler"]["gpus"] = g;
  }
  if (!e.per_gpu.empty()) {
    Json g = Json::object();
    for (const auto& [gpu, t] : e.per_gpu) g[gpu] = terms_json(t);
    j["gpus"] = g;
  }
  if (!e.fidelity.empty()) {
    Json f = Json::object();
    for (const auto& [gpu, x] : e.fidelity) f[gpu] = engine_fidelity_to_json(x);
    j["fidelity"] = f;
  }
  return j;
}

const EngineProfile* builtin_engine(const std::string& name) {
  const auto& m = builtin_engines();
  auto it = m.find(name);
  return it == m.end() ? nullptr : &it->second;
}

std::vector<std::string> builtin_engine_names() {
  std::vector<std::string> v;
  for (const auto& [name, e] : builtin_engines()) v.push_back(name);
  return v;
}

EngineProfile resolve_engine(const JsonReader& r, const std::string& key,
                             const std::string& base_dir) {
  const Json& v = r.value(key);
  if (v.is_object()) return parse_engine_profile(r.object(key));
  if (!v.is_string())
    r.fail(key, "expected an engine name (" + join(builtin_engine_names()) +
                    "), an engine profile file or an inline engine profile object, got " +
                    config::describe(v));
  const std::string name = v.get<std::string>();
  if (const EngineProfile* e = builtin_engine(name)) return *e;
  const bool looks_like_path = name.find('/') != std::string::npos ||
                               (name.size() > 5 && name.substr(name.size() - 5) == ".json");
  if (!looks_like_path)
    r.fail(key, "unknown engine \"" + name + "\" (known: " + join(builtin_engine_names()) +
                    "; or a path to an engine profile file)");
  std::string path = name;
  if (fs::path(path).is_relative()) path = (fs::path(base_dir) / path).string();
  auto e = load_engine_profile_file(path);
  if (!e.ok()) r.fail(key, e.status().message());
  return *e;
}

}  // namespace prima::perf
