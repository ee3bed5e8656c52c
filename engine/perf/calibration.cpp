// Calibration tables and hardware profiles: the parameter table, parsing, writing, the
// built-in profiles and which parameters a run uses (calibration.h).
#include "engine/perf/calibration.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "engine/config/embedded.h"
#include "engine/config/json_parse.h"
#include "engine/metrics/summary.h"
#include "engine/perf/engine_profile.h"

namespace prima::perf {
namespace {

using E = Efficiency;
using F = EfficiencyField;

constexpr Axis H = Axis::kHardware;
constexpr Axis N = Axis::kEngine;

constexpr F kFields[] = {
    {"gemm_compute", &E::gemm_compute, F::kShare, "GEMM: share of tensor peak at large M", H},
    {"gemm_m_half", &E::gemm_m_half, F::kCount, "GEMM: rows at which the compute share halves", H},
    {"gemm_tile", &E::gemm_tile, F::kCount,
     "GEMM: output tile edge for wave quantization (0: off; needs the GPU's sms)", H},
    {"gemm_memory", &E::gemm_memory, F::kShare, "GEMM: share of HBM bandwidth streaming weights",
     H},
    {"gemm_latency_s", &E::gemm_latency_s, F::kSeconds,
     "GEMM: fixed time of each kernel (ramp-up and tail)", H},
    {"attention_compute", &E::attention_compute, F::kShare,
     "prefill attention (fused kernel): share of 16-bit peak at long context", H},
    {"attention_seq_half", &E::attention_seq_half, F::kCount,
     "prefill attention (fused kernel): context at which the share halves", H},
    {"attention_score_bytes", &E::attention_score_bytes, F::kCount,
     "prefill attention: score-matrix bytes per attended pair and head (0: fused kernel)", N},
    {"alibi_bias_bytes", &E::alibi_bias_bytes, F::kCount,
     "prefill attention of ALiBi models: bias bytes per attended pair and head (0: in-kernel)", N},
    {"attention_unsharded_bytes", &E::attention_unsharded_bytes, F::kCount,
     "prefill attention: bytes per attended pair and model head that TP does not divide", N},
    {"attention_memory", &E::attention_memory, F::kShare,
     "decode attention: share of HBM bandwidth reading the KV cache", H},
    {"elementwise_memory", &E::elementwise_memory, F::kShare,
     "norms, RoPE, activations, sampling: share of HBM bandwidth", H},
    {"allreduce_bandwidth", &E::allreduce_bandwidth, F::kShare,
     "ring all-reduce (Simple): share of link bandwidth", H},
    {"allreduce_latency_s", &E::allreduce_latency_s, F::kSeconds, "ring all-reduce: per hop", H},
    {"allreduce_base_s", &E::allreduce_base_s, F::kSeconds,
     "ring all-reduce (Simple): per collective", H},
    {"allreduce_ll_bandwidth", &E::allreduce_ll_bandwidth, F::kOptionalShare,
     "ring all-reduce, low-latency protocol: share of link bandwidth (0: off)", H},
    {"allreduce_ll_latency_s", &E::allreduce_ll_latency_s, F::kSeconds,
     "ring all-reduce, low-latency protocol: per hop", H},
    {"nvls_bandwidth", &E::nvls_bandwidth, F::kOptionalShare,
     "NVLS all-reduce: share of link bandwidth (0: no NVLS)", H},
    {"nvls_latency_s", &E::nvls_latency_s, F::kSeconds, "NVLS all-reduce: per collective", H},
    {"oneshot_latency_s", &E::oneshot_latency_s, F::kSeconds,
     "one-shot (custom) all-reduce kernel: per collective", H},
    {"oneshot_max_bytes", &E::oneshot_max_bytes, F::kCount,
     "one-shot (custom) all-reduce: largest buffer the engine sends through it (0: NCCL only)", N},
    {"p2p_latency_s", &E::p2p_latency_s, F::kSeconds, "pipeline send: per message", H},
    {"step_overhead_s", &E::step_overhead_s, F::kSeconds, "per step: scheduling and launch", N},
    {"seq_overhead_s", &E::seq_overhead_s, F::kSeconds, "per sequence in a step: host work", N},
    {"rank_overhead_s", &E::rank_overhead_s, F::kSeconds,
     "per step and GPU of a stage beyond the first: handing the step to each TP worker", N},
    {"layer_overhead_s", &E::layer_overhead_s, F::kSeconds, "per layer: GPU kernel gaps", N},
    {"layer_launch_s", &E::layer_launch_s, F::kSeconds,
     "per layer: host launch time, the least a layer takes (eager steps)", N},
    {"sampling_logit_s", &E::sampling_logit_s, F::kSeconds,
     "host sampling: per sampled row and vocabulary entry", N},
    {"graph_max_tokens", &E::graph_max_tokens, F::kCount,
     "CUDA graphs: the largest step (tokens) that replays a graph (0: none)", N},
    {"graph_layer_overhead_s", &E::graph_layer_overhead_s, F::kSeconds,
     "CUDA graphs: per layer kernel gaps inside a graph", N},
};

void read_field(const config::JsonReader& r, const F& f, Efficiency* e) {
  double& v = e->*f.member;
  switch (f.kind) {
    case F::kShare:
    case F::kOptionalShare:
      v = r.fraction(f.name, v);
      if (f.kind == F::kShare && v <= 0)
        r.fail(f.name, "an efficiency share must be in (0, 1]; 0 would make time infinite");
      break;
    case F::kSeconds:
      v = r.duration_s(f.name, v);
      if (v < 0) r.fail(f.name, "a latency or overhead must be >= 0");
      break;
    case F::kCount:
      v = r.non_negative_number(f.name, v);
      break;
  }
}

// The hardware terms of an object; an engine term is an error saying which axis owns it.
Efficiency parse_efficiency(const config::JsonReader& r, Efficiency e) {
  for (const F& f : kFields) {
    if (f.axis == Axis::kHardware) {
      read_field(r, f, &e);
    } else if (r.has(f.name)) {
      r.fail(f.name, std::string(f.name) +
                         " is an engine term (the engine axis owns it): set it in the engine "
                         "profile (a scenario's \"engine\", e.g. {\"base\": \"vllm\", "
                         "\"terms\": {\"" +
                         f.name + "\": ...}}; topologies/engines/), not with the hardware");
    }
  }
  r.string("source", "");
  r.finish();
  return e;
}

Fidelity parse_fidelity(const config::JsonReader& r) {
  Fidelity f;
  f.calibration_data = r.string("calibration_data", "");
  f.points = static_cast<int>(r.non_negative_integer("points", 0));
  f.median_abs_error = r.number("median_abs_error", -1);
  f.p90_abs_error = r.number("p90_abs_error", -1);
  f.max_abs_error = r.number("max_abs_error", -1);
  r.consume("per_point");  // the table behind the figures, for readers; not needed here
  r.finish();
  f.calibrated = f.points > 0;
  return f;
}

}  // namespace

std::span<const EfficiencyField> efficiency_fields() {
  return kFields;
}

const char* axis_name(Axis a) {
  return a == Axis::kHardware ? "hardware" : "engine";
}

const EfficiencyField* find_efficiency_field(const std::string& name) {
  for (const F& f : kFields)
    if (name == f.name) return &f;
  return nullptr;
}

std::string check_efficiency(const Efficiency& e) {
  for (const F& f : kFields) {
    const double v = e.*f.member;
    if (!std::isfinite(v)) return fmt::format("{}: not a finite number", f.name);
    switch (f.kind) {
      case F::kShare:
        if (v <= 0 || v > 1) return fmt::format("{}: {} is not a share in (0, 1]", f.name, v);
        break;
      case F::kOptionalShare:
        if (v < 0 || v > 1) return fmt::format("{}: {} is not a share in [0, 1]", f.name, v);
        break;
      case F::kSeconds:
      case F::kCount:
        if (v < 0) return fmt::format("{}: {} is negative", f.name, v);
        break;
    }
  }
  return "";
}

void summarize_errors(const std::vector<double>& errors, Fidelity* f) {
  std::vector<double> abs_errors;
  for (double e : errors) abs_errors.push_back(std::fabs(e));
  f->points = static_cast<int>(abs_errors.size());
  f->calibrated = f->points > 0;
  if (!f->calibrated) return;
  const metrics::Summary s = metrics::summarize(std::move(abs_errors));
  f->median_abs_error = s.p50;
  f->p90_abs_error = s.p90;
  f->max_abs_error = s.max;
}

std::string Fidelity::summary() const {
  if (!calibrated) return "roofline only, uncalibrated";
  std::string s = fmt::format("profile {}", profile.empty() ? std::string("(unnamed)") : profile);
  if (median_abs_error >= 0)
    s += fmt::format(": median error {:.1f}%, max {:.1f}% on {} points", median_abs_error * 100,
                     max_abs_error * 100, points);
  else
    s += ": error not measured";
  if (!calibration_data.empty()) s += " (" + calibration_data + ")";
  return s;
}

const Efficiency& Calibration::for_gpu(const std::string& gpu) const {
  auto it = per_gpu.find(gpu);
  return it == per_gpu.end() ? defaults : it->second;
}

Profile parse_profile(const config::JsonReader& r) {
  Profile p;
  p.name = r.string("profile");
  if (p.name.empty()) r.fail("profile", "expected the GPU name the profile calibrates");
  p.description = r.string("description", "");
  p.source = r.string("source", "");
  if (auto e = r.optional_object("efficiency")) p.efficiency = parse_efficiency(*e, p.efficiency);
  if (auto f = r.optional_object("fidelity")) p.fidelity = parse_fidelity(*f);
  p.fidelity.profile = p.name;
  p.fidelity.source = p.source;
  if (r.has("gpu")) {
    if (!r.value("gpu").is_object()) r.fail("gpu", "expected a topology GPU object");
    p.gpu = r.value("gpu");
  }
  r.consume("measurements");  // what `prima profile` measured, for readers; not needed here
  r.finish();
  return p;
}

Calibration parse_calibration(const config::JsonReader& r) {
  Calibration c;
  c.source = r.file();
  if (r.has("profile") &&
      r.value("profile").is_string()) {  // a hardware profile: its parameters for its GPU
    Profile p = parse_profile(r);
    c.per_gpu[p.name] = p.efficiency;
    c.fidelity[p.name] = p.fidelity;
    return c;
  }
  if (auto d = r.optional_object("defaults")) {
    c.defaults = parse_efficiency(*d, c.defaults);
    c.has_defaults = true;
  }
  if (auto g = r.optional_object("gpus")) {
    for (auto it = g->json().begin(); it != g->json().end(); ++it)
      c.per_gpu[it.key()] = parse_efficiency(g->object(it.key()), c.defaults);
    g->finish();
  }
  r.string("source", "");
  r.consume("hardware");  // older `prima profile` output: the GPU object and the measurements
  r.consume("profile");
  r.finish();
  return c;
}

Result<Calibration> load_calibration_file(const std::string& path) {
  auto j = config::read_json_file(path);
  if (!j.ok()) return j.status();
  Calibration c;
  Status st = config::to_status([&] {
    if (!j->is_object()) throw config::ConfigError(path + ": expected a JSON object");
    c = parse_calibration(config::JsonReader(*j, path));
  });
  if (!st.ok()) return st;
  return c;
}

Result<Profile> load_profile_file(const std::string& path) {
  auto j = config::read_json_file(path);
  if (!j.ok()) return j.status();
  Profile p;
  Status st = config::to_status([&] {
    if (!j->is_object()) throw config::ConfigError(path + ": expected a JSON object");
    p = parse_profile(config::JsonReader(*j, path));
  });
  if (!st.ok()) return st;
  return p;
}

config::Json efficiency_to_json(const Efficiency& e) {
  config::Json j = config::Json::object();
  for (const F& f : kFields)
    if (f.axis == Axis::kHardware) j[f.name] = e.*f.member;
  return j;
}

config::Json fidelity_to_json(const Fidelity& f) {
  config::Json j{{"profile", f.profile.empty() ? config::Json(nullptr) : config::Json(f.profile)},
                 {"source", f.source},
                 {"calibrated", f.calibrated},
                 {"summary", f.summary()}};
  if (f.calibrated) {
    j["calibration_data"] = f.calibration_data;
    j["points"] = f.points;
    auto opt = [](double v) { return v >= 0 ? config::Json(v) : config::Json(nullptr); };
    j["median_abs_error"] = opt(f.median_abs_error);
    j["p90_abs_error"] = opt(f.p90_abs_error);
    j["max_abs_error"] = opt(f.max_abs_error);
  }
  return j;
}

config::Json profile_to_json(const Profile& p) {
  config::Json j{{"profile", p.name},
                 {"description", p.description},
                 {"source", p.source},
                 {"efficiency", efficiency_to_json(p.efficiency)}};
  config::Json f{{"calibration_data", p.fidelity.calibration_data}, {"points", p.fidelity.points}};
  if (p.fidelity.median_abs_error >= 0) f["median_abs_error"] = p.fidelity.median_abs_error;
  if (p.fidelity.p90_abs_error >= 0) f["p90_abs_error"] = p.fidelity.p90_abs_error;
  if (p.fidelity.max_abs_error >= 0) f["max_abs_error"] = p.fidelity.max_abs_error;
  j["fidelity"] = f;
  if (p.gpu) j["gpu"] = *p.gpu;
  return j;
}

namespace {
// Built-in profiles, parsed once on first use. An embedded profile that does not parse is a
// build defect (skipped here): CalibrationSet.ProfilesRecordTheErrorTheyMeasure loads each.
const std::map<std::string, Profile>& builtin_profiles() {
  static const std::map<std::string, Profile> profiles = [] {
    std::map<std::string, Profile> m;
    for (const auto& f : config::embedded_files()) {
      const std::string path = f.path;
      if (path.rfind("topologies/profiles/", 0) != 0) continue;
      auto j = config::parse_json_text(f.content, path);
      if (!j.ok() || !j->is_object()) continue;
      Status st = config::to_status([&] {
        Profile p = parse_profile(config::JsonReader(*j, path));
        m[p.name] = p;
      });
      (void)st;
    }
    return m;
  }();
  return profiles;
}
}  // namespace

const Profile* builtin_profile(const std::string& gpu_name) {
  const auto& m = builtin_profiles();
  auto it = m.find(gpu_name);
  return it == m.end() ? nullptr : &it->second;
}

std::vector<std::string> builtin_profile_names() {
  std::vector<std::string> v;
  for (const auto& [name, p] : builtin_profiles()) v.push_back(name);
  return v;
}

namespace {

Resolved resolve_hardware(const Calibration& c, const std::string& gpu_name) {
  Resolved r;
  const bool named = c.per_gpu.count(gpu_name) > 0;
  if (named || c.has_defaults) {
    r.efficiency = c.for_gpu(gpu_name);
    auto f = c.fidelity.find(gpu_name);
    if (f != c.fidelity.end() && named) {
      r.fidelity = f->second;
    } else {
      r.fidelity.profile = c.source;
      r.fidelity.source = c.source;
      r.fidelity.calibrated = true;  // the user's parameters; their error is not known here
    }
    return r;
  }
  if (const Profile* p = c.roofline_only ? nullptr : builtin_profile(gpu_name)) {
    r.efficiency = p->efficiency;
    r.fidelity = p->fidelity;
    return r;
  }
  r.fidelity.source = "datasheet peaks and default efficiency shares";
  return r;
}

}  // namespace

Resolved resolve(const Calibration& c, const std::string& gpu_name) {
  Resolved r = resolve_hardware(c, gpu_name);
  r.engine = c.engine;
  if (!r.engine) {
    const EngineProfile* e = builtin_engine(c.roofline_only ? kRooflineEngine : kDefaultEngine);
    if (!e) e = builtin_engine(kRooflineEngine);
    r.engine = std::shared_ptr<const EngineProfile>(e, [](const EngineProfile*) {});
  }
  r.efficiency = merge_axes(r.efficiency, *r.engine, gpu_name);
  return r;
}

}  // namespace prima::perf
