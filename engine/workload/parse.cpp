// Parsing and validation of the scenario's "workload" object (keys documented in
// docs/workloads.md).
#include <cmath>
#include <filesystem>

#include "engine/workload/lengths.h"
#include "engine/workload/workload.h"

namespace prima::workload {
namespace {

using config::JsonReader;

const std::vector<std::string> kClasses = {"high", "normal", "low"};

std::vector<RatePoint> parse_profile(const JsonReader& r, const std::string& key) {
  const config::Json& v = r.value(key);
  const char* shape = "expected an array of [t_s, rate_rps] pairs";
  if (!v.is_array() || v.empty()) r.fail(key, std::string(shape) + ", got " + config::describe(v));
  std::vector<RatePoint> out;
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto& p = v[i];
    std::string k = key + "/" + std::to_string(i);
    if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number())
      r.fail(k, "expected a pair [t_s, rate_rps] of numbers, got " + config::describe(p));
    RatePoint rp{p[0].get<double>(), p[1].get<double>()};
    if (!(rp.t_s >= 0) || !std::isfinite(rp.t_s)) r.fail(k, "expected a time t_s >= 0");
    if (!(rp.rate_rps >= 0) || !std::isfinite(rp.rate_rps)) r.fail(k, "expected a rate >= 0");
    if (!out.empty() && !(rp.t_s > out.back().t_s))
      r.fail(k, "times must increase strictly along the profile");
    out.push_back(rp);
  }
  bool any = false;
  for (const auto& p : out) any = any || p.rate_rps > 0;
  if (!any) r.fail(key, "expected at least one positive rate");
  return out;
}

void parse_think(const JsonReader& r, ArrivalSpec* a) {
  const std::string key = "think_time_s";
  if (!r.has(key)) {
    r.consume(key);
    a->think_time_s = 0;
    return;
  }
  if (!r.value(key).is_object()) {  // exponential with this mean
    a->think_time_s = r.duration_s(key);
    return;
  }
  JsonReader t = r.object(key);
  std::string type = t.one_of("type", {"fixed", "exponential"});
  a->think_fixed = type == "fixed";
  a->think_time_s = a->think_fixed ? t.duration_s("value") : t.duration_s("mean");
  t.finish();
}

ArrivalSpec parse_arrival(const JsonReader& r, const std::string& base_dir) {
  ArrivalSpec a;
  std::string type = r.one_of("type", {"poisson", "gamma", "constant", "closed_loop", "trace"});
  if (type == "poisson") {
    a.type = ArrivalType::kPoisson;
    if (r.has("rate_profile")) {
      if (r.has("rate_rps")) r.fail("rate_rps", "give rate_rps or rate_profile, not both");
      a.rate_profile = parse_profile(r, "rate_profile");
      a.period_s = r.duration_s("period_s", 0);
      if (a.period_s > 0 && !(a.rate_profile.back().t_s < a.period_s))
        r.fail("period_s", "expected a period longer than the last profile time (" +
                               std::to_string(a.rate_profile.back().t_s) + ")");
    } else {
      a.rate_rps = r.positive_number("rate_rps");
      r.consume("period_s");
      if (r.has("period_s")) r.fail("period_s", "period_s needs a rate_profile");
    }
  } else if (type == "gamma" || type == "constant") {
    a.type = type == "gamma" ? ArrivalType::kGamma : ArrivalType::kConstant;
    a.rate_rps = r.positive_number("rate_rps");
    if (type == "gamma") {
      a.cv = r.positive_number("cv");
      if (a.cv > 100) r.fail("cv", "expected a coefficient of variation in (0, 100]");
    }
  } else if (type == "closed_loop") {
    a.type = ArrivalType::kClosedLoop;
    std::int64_t users = r.positive_integer("users");
    if (users > 10'000'000) r.fail("users", "expected at most 10000000 users");
    a.users = static_cast<int>(users);
    parse_think(r, &a);
    a.ramp_up_s = r.duration_s("ramp_up_s", 0);
  } else {
    a.type = ArrivalType::kTrace;
    const std::string format = r.one_of("format", {"azure_csv", "jsonl", "mooncake"});
    a.format = format == "jsonl"      ? TraceFormat::kJsonl
               : format == "mooncake" ? TraceFormat::kMooncake
                                      : TraceFormat::kAzureCsv;
    std::filesystem::path p(r.string("path"));
    if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
    a.path = p.lexically_normal().string();
    if (r.has("rate_rps") && r.has("time_scale"))
      r.fail("rate_rps", "give time_scale or rate_rps, not both");
    a.time_scale = r.positive_number("time_scale", 1);
    a.rate_rps = r.positive_number("rate_rps", 0);
    a.loop = r.boolean("loop", false);
  }
  r.finish();
  return a;
}

// {"high": x, "normal": y, ...}: values read by `read`, unknown classes rejected.
template <typename Read>
void parse_classes(const JsonReader& parent, const std::string& key, Read read) {
  JsonReader r = parent.object(key);
  for (int c = 0; c < kNumPriorities; ++c) read(r, kClasses[c], c);
  r.finish();
}

}  // namespace

WorkloadSpec parse_workload(const config::JsonReader& r, const std::string& base_dir) {
  WorkloadSpec w;
  w.arrival = parse_arrival(r.object("arrival"), base_dir);
  if (w.arrival.type == ArrivalType::kTrace) {
    for (const char* k : {"prompt_tokens", "output_tokens"}) {
      if (r.has(k)) r.fail(k, "a trace carries its own lengths; remove this field");
      r.consume(k);
    }
  } else {
    for (const char* k : {"prompt_tokens", "output_tokens"})
      if (!r.has(k))
        r.fail(k, "missing required field (expected a token count or a length distribution)");
    w.prompt_tokens = parse_length(r, "prompt_tokens", w.prompt_tokens);
    w.output_tokens = parse_length(r, "output_tokens", w.output_tokens);
  }
  if (r.has("priority_mix")) {
    double sum = 0;
    parse_classes(r, "priority_mix", [&](const JsonReader& c, const std::string& name, int i) {
      w.priority_mix[i] = c.fraction(name, 0);
      sum += w.priority_mix[i];
    });
    if (std::fabs(sum - 1.0) > 1e-6)
      r.fail("priority_mix",
             "expected fractions summing to 1, got a sum of " + std::to_string(sum));
  } else {
    r.consume("priority_mix");
  }
  if (r.has("sla")) {
    parse_classes(r, "sla", [&](const JsonReader& c, const std::string& name, int i) {
      w.sla_s[i] = c.duration_s(name, 0);
    });
  } else {
    r.consume("sla");
  }
  if (auto p = r.optional_object("shared_prefix")) {
    w.prefix.groups = static_cast<int>(p->positive_integer("groups"));
    std::int64_t tokens = p->positive_integer("tokens");
    if (tokens > (1 << 30)) p->fail("tokens", "expected at most 2^30 tokens");
    w.prefix.tokens = static_cast<int>(tokens);
    w.prefix.fraction = p->fraction("fraction", 1);
    p->finish();
  }
  w.max_requests = static_cast<std::uint64_t>(r.non_negative_integer("max_requests", 0));
  if (auto se = r.optional_object("sessions")) {
    if (w.arrival.type != ArrivalType::kClosedLoop)
      r.fail("sessions", "multi-turn sessions need arrival type closed_loop (users hold them)");
    if (w.prefix.groups > 0)
      r.fail("sessions",
             "sessions and shared_prefix both name the prompt's shared blocks; "
             "use one");
    w.sessions.enabled = true;
    w.sessions.turns = parse_length(*se, "turns", w.sessions.turns);
    w.sessions.max_context =
        static_cast<int>(se->positive_integer("max_context", w.sessions.max_context));
    se->finish();
  }
  w.expert_load_skew = r.positive_number("expert_load_skew", 1);
  if (!(w.expert_load_skew >= 1) || !std::isfinite(w.expert_load_skew))
    r.fail("expert_load_skew",
           "expected the busiest expert-parallel rank's load over the mean, >= 1 (1: uniform)");
  r.finish();
  Status st = w.validate();
  if (!st.ok()) r.fail_here(st.message());
  return w;
}

Result<WorkloadSpec> parse_workload_status(const config::JsonReader& r,
                                           const std::string& base_dir) {
  WorkloadSpec w;
  Status st = config::to_status([&] { w = parse_workload(r, base_dir); });
  if (!st.ok()) return st;
  return w;
}

Status WorkloadSpec::validate() const {
  const ArrivalSpec& a = arrival;
  auto bad = [](const std::string& m) { return invalid_argument("workload: " + m); };
  switch (a.type) {
    case ArrivalType::kPoisson:
      if (a.rate_profile.empty() && !(a.rate_rps > 0 && std::isfinite(a.rate_rps)))
        return bad("poisson needs rate_rps > 0 or a rate_profile");
      for (std::size_t i = 0; i < a.rate_profile.size(); ++i) {
        const auto& p = a.rate_profile[i];
        if (!(p.rate_rps >= 0) || !(p.t_s >= 0) || (i > 0 && !(p.t_s > a.rate_profile[i - 1].t_s)))
          return bad("rate_profile needs increasing times >= 0 and rates >= 0");
      }
      if (a.period_s < 0 ||
          (a.period_s > 0 && !a.rate_profile.empty() && !(a.rate_profile.back().t_s < a.period_s)))
        return bad("period_s must exceed the last rate_profile time");
      break;
    case ArrivalType::kGamma:
      if (!(a.cv > 0) || !std::isfinite(a.cv)) return bad("gamma needs cv > 0");
      [[fallthrough]];
    case ArrivalType::kConstant:
      if (!(a.rate_rps > 0) || !std::isfinite(a.rate_rps)) return bad("rate_rps must be > 0");
      break;
    case ArrivalType::kClosedLoop:
      if (a.users < 1) return bad("closed_loop needs users >= 1");
      if (!(a.think_time_s >= 0) || !std::isfinite(a.think_time_s))
        return bad("think_time_s must be >= 0");
      if (!(a.ramp_up_s >= 0) || !std::isfinite(a.ramp_up_s)) return bad("ramp_up_s must be >= 0");
      break;
    case ArrivalType::kTrace:
      if (a.path.empty()) return bad("trace needs a path");
      if (!(a.time_scale > 0) || !std::isfinite(a.time_scale)) return bad("time_scale must be > 0");
      if (!(a.rate_rps >= 0)) return bad("trace rate_rps must be >= 0 (0 = as recorded)");
      break;
  }
  PRIMA_RETURN_IF_ERROR(prompt_tokens.validate("workload: prompt_tokens"));
  PRIMA_RETURN_IF_ERROR(output_tokens.validate("workload: output_tokens"));
  double sum = 0;
  for (double f : priority_mix) {
    if (!(f >= 0)) return bad("priority_mix fractions must be >= 0");
    sum += f;
  }
  if (std::fabs(sum - 1.0) > 1e-6) return bad("priority_mix fractions must sum to 1");
  for (double s : sla_s)
    if (!(s >= 0)) return bad("sla must be >= 0");
  if (prefix.groups < 0 || prefix.tokens < 0 || !(prefix.fraction >= 0 && prefix.fraction <= 1))
    return bad("shared_prefix needs groups >= 0, tokens >= 0 and a fraction in [0, 1]");
  return ok_status();
}

}  // namespace prima::workload
