// Benchmark workloads as engine WorkloadSpecs, and planning open-loop arrivals on a virtual
// clock (see schedule.h).
#include "loadgen/schedule.h"

#include <fmt/format.h>

#include <cmath>
#include <map>

#include "engine/core/virtual_runtime.h"

namespace prima::loadgen {
namespace {

workload::LengthSpec length_spec(int len, double ratio) {
  if (ratio <= 0) return workload::LengthSpec::fixed(len);
  workload::LengthSpec s;
  s.kind = workload::LengthSpec::Kind::kUniform;
  s.min = std::max(1, static_cast<int>(std::floor(len * (1 - ratio))));
  s.max = std::max(s.min, static_cast<int>(std::ceil(len * (1 + ratio))));
  return s;
}

std::string length_text(const workload::LengthSpec& s) {
  using K = workload::LengthSpec::Kind;
  switch (s.kind) {
    case K::kFixed:
      return fmt::format("{:g}", s.value);
    case K::kUniform:
      return fmt::format("uniform {}..{}", s.min, s.max);
    case K::kLognormal:
      return fmt::format("lognormal(mu {}, sigma {})", s.mu, s.sigma);
    case K::kNormal:
      return fmt::format("normal(mean {}, stddev {})", s.mean, s.stddev);
    case K::kEmpirical:
      return fmt::format("empirical ({} values)", s.values.size());
    case K::kSequence:
      return fmt::format("sequence ({} values)", s.values.size());
  }
  return "?";
}

}  // namespace

Status ScheduleOptions::validate() const {
  if (!(request_rate > 0))
    return invalid_argument(fmt::format("--request-rate: {} must be > 0 (or inf)", request_rate));
  if (arrival != "poisson" && arrival != "constant" && arrival != "gamma")
    return invalid_argument("--arrival: '" + arrival + "' is not poisson, constant or gamma");
  if (!(burstiness > 0) || !std::isfinite(burstiness))
    return invalid_argument(fmt::format("--burstiness: {} must be > 0", burstiness));
  if (concurrency < 0) return invalid_argument("--concurrency must be >= 1");
  if (max_concurrency < 0) return invalid_argument("--max-concurrency must be >= 1");
  if (concurrency > 0 && std::isfinite(request_rate))
    return invalid_argument(
        "--concurrency and --request-rate exclude each other (closed vs open loop)");
  if (!(duration_s > 0))
    return invalid_argument(fmt::format("--duration: {} must be > 0", duration_s));
  if (num_prompts == 0 && !std::isfinite(duration_s) && trace_path.empty())
    return invalid_argument("give --num-prompts or --duration (when to stop)");
  if (input_len < 1) return invalid_argument("--random-input-len must be >= 1");
  if (output_len < 1) return invalid_argument("--random-output-len must be >= 1");
  if (!(range_ratio >= 0 && range_ratio < 1))
    return invalid_argument(fmt::format("--random-range-ratio: {} must be in [0, 1)", range_ratio));
  if (!trace_path.empty()) {
    if (trace_format != "azure" && trace_format != "jsonl")
      return invalid_argument("--trace-format: '" + trace_format + "' is not azure or jsonl");
    if (concurrency > 0) return invalid_argument("--trace and --concurrency exclude each other");
  }
  if (!(time_scale > 0) || !std::isfinite(time_scale))
    return invalid_argument(fmt::format("--time-scale: {} must be > 0", time_scale));
  if (!std::isfinite(request_rate) && concurrency == 0 && trace_path.empty() && num_prompts == 0)
    return invalid_argument(
        "--duration without --num-prompts needs --request-rate or --concurrency");
  return ok_status();
}

Result<workload::WorkloadSpec> workload_from_options(const ScheduleOptions& o) {
  PRIMA_RETURN_IF_ERROR(o.validate());
  workload::WorkloadSpec w;
  w.prompt_tokens = length_spec(o.input_len, o.range_ratio);
  w.output_tokens = length_spec(o.output_len, o.range_ratio);
  w.max_requests = o.num_prompts;
  workload::ArrivalSpec& a = w.arrival;
  if (!o.trace_path.empty()) {
    a.type = workload::ArrivalType::kTrace;
    a.format = o.trace_format == "jsonl" ? workload::TraceFormat::kJsonl
                                         : workload::TraceFormat::kAzureCsv;
    a.path = o.trace_path;
    a.time_scale = o.time_scale;
    a.rate_rps = std::isfinite(o.request_rate) ? o.request_rate : 0;
  } else if (o.concurrency > 0 || !std::isfinite(o.request_rate)) {
    a.type = workload::ArrivalType::kClosedLoop;
    std::uint64_t users =
        o.concurrency > 0 ? static_cast<std::uint64_t>(o.concurrency) : o.num_prompts;
    if (o.concurrency == 0 && o.max_concurrency > 0)
      users = std::min<std::uint64_t>(users, static_cast<std::uint64_t>(o.max_concurrency));
    a.users = static_cast<int>(users);
    a.think_fixed = true;
    a.think_time_s = 0;
  } else {
    a.rate_rps = o.request_rate;
    if (o.arrival == "constant") {
      a.type = workload::ArrivalType::kConstant;
    } else if (o.arrival == "gamma" || o.burstiness != 1) {
      a.type = workload::ArrivalType::kGamma;
      a.cv = 1.0 / std::sqrt(o.burstiness);
    } else {
      a.type = workload::ArrivalType::kPoisson;
    }
  }
  PRIMA_RETURN_IF_ERROR(w.validate());
  return w;
}

Result<std::vector<workload::RequestSpec>> plan_open_loop(const workload::WorkloadSpec& spec,
                                                          std::uint64_t seed, double duration_s) {
  if (spec.arrival.type == workload::ArrivalType::kClosedLoop)
    return invalid_argument("plan_open_loop: a closed-loop workload has no fixed arrivals");
  const bool finite_trace =
      spec.arrival.type == workload::ArrivalType::kTrace && !spec.arrival.loop;
  if (spec.max_requests == 0 && !std::isfinite(duration_s) && !finite_trace)
    return invalid_argument("plan_open_loop: an unbounded workload (no count, no duration)");
  PRIMA_ASSIGN_OR_RETURN(auto driver, workload::make_workload(spec, seed, duration_s));
  VirtualRuntime rt;
  std::vector<workload::RequestSpec> out;
  PRIMA_RETURN_IF_ERROR(
      driver->start(&rt, [&](const workload::RequestSpec& r) { out.push_back(r); }));
  while (rt.step()) {
  }
  return out;
}

std::string describe_workload(const workload::WorkloadSpec& w, double duration_s) {
  const auto& a = w.arrival;
  std::string arr;
  switch (a.type) {
    case workload::ArrivalType::kPoisson:
      arr = a.rate_profile.empty() ? fmt::format("poisson {:g} req/s", a.rate_rps)
                                   : "poisson with a rate profile";
      break;
    case workload::ArrivalType::kGamma:
      arr = fmt::format("gamma {:g} req/s (cv {:.3g})", a.rate_rps, a.cv);
      break;
    case workload::ArrivalType::kConstant:
      arr = fmt::format("constant {:g} req/s", a.rate_rps);
      break;
    case workload::ArrivalType::kClosedLoop:
      arr = fmt::format("closed loop, {} concurrent", a.users);
      if (a.think_time_s > 0) arr += fmt::format(" (think {:g} s)", a.think_time_s);
      break;
    case workload::ArrivalType::kTrace:
      arr = "trace " + a.path;
      break;
  }
  std::string s = arr;
  if (w.max_requests > 0) s += fmt::format(", {} requests", w.max_requests);
  if (std::isfinite(duration_s)) s += fmt::format(", {:g} s", duration_s);
  if (a.type != workload::ArrivalType::kTrace)
    s += ", input " + length_text(w.prompt_tokens) + ", output " + length_text(w.output_tokens);
  return s;
}

}  // namespace prima::loadgen
