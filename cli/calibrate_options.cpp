// `prima calibrate`'s flags and their checks (see calibrate_options.h).
#include "cli/calibrate_options.h"

#include <fmt/format.h>

#include "cli/flags.h"
#include "engine/config/json_reader.h"

namespace po = boost::program_options;

namespace prima::cli {
namespace {

// The items of a comma-separated list, spaces dropped, empty items skipped.
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// A parameter's value from text: shares and counts as numbers, latencies with units.
bool parse_value(const perf::EfficiencyField& f, const std::string& v, double* out) {
  if (f.kind == perf::EfficiencyField::kSeconds) return config::parse_duration_s(v, out);
  try {
    std::size_t pos = 0;
    *out = std::stod(v, &pos);
    return pos == v.size();
  } catch (...) {
    return false;
  }
}

Result<std::vector<ParamValue>> parse_sets(const std::vector<std::string>& sets) {
  std::vector<ParamValue> out;
  for (const auto& kv : sets) {
    const auto eq = kv.find('=');
    const perf::EfficiencyField* f =
        eq == std::string::npos ? nullptr : perf::find_efficiency_field(kv.substr(0, eq));
    double v = 0;
    if (!f)
      return invalid_argument(fmt::format(
          "--set {}: expected PARAMETER=VALUE with a parameter of docs/cost-model.md", kv));
    if (!parse_value(*f, kv.substr(eq + 1), &v))
      return invalid_argument(
          fmt::format("--set {}: '{}' is not a value for {}", kv, kv.substr(eq + 1), f->name));
    out.emplace_back(f, v);
  }
  return out;
}

Result<FitSpace> parse_fit(const std::string& fit, const std::vector<std::string>& bounds) {
  FitSpace space;
  for (const auto& name : split(fit)) {
    const perf::EfficiencyField* f = perf::find_efficiency_field(name);
    if (!f)
      return invalid_argument("--fit: unknown parameter '" + name + "' (see docs/cost-model.md)");
    space.fields.push_back(f);
    space.bounds.push_back(fit_default_bound(*f));
  }
  for (const auto& kv : bounds) {
    const auto eq = kv.find('='), colon = kv.find(':');
    bool ok = eq != std::string::npos && colon != std::string::npos && colon > eq;
    std::size_t i = 0;
    for (; ok && i < space.fields.size(); ++i)
      if (kv.substr(0, eq) == space.fields[i]->name) break;
    if (!ok || i == space.fields.size())
      return invalid_argument("--bound " + kv +
                              ": expected KEY=LO:HI for a parameter given to --fit");
    double lo = 0, hi = 0;
    if (!parse_value(*space.fields[i], kv.substr(eq + 1, colon - eq - 1), &lo) ||
        !parse_value(*space.fields[i], kv.substr(colon + 1), &hi) || !(lo < hi))
      return invalid_argument("--bound " + kv + ": LO and HI must be values with LO < HI");
    space.bounds[i] = {lo, hi};
  }
  return space;
}

}  // namespace

Status CalibrateOptions::validate() const {
  if (auto s = parse_sets(sets); !s.ok()) return s.status();
  if (fit && !engine_points) {
    if (gpu.empty())
      return invalid_argument("--fit needs --gpu: a profile is fitted for one GPU type");
    if (!out) return invalid_argument("--fit needs --out FILE: the profile to write");
    if (auto s = parse_fit(*fit, bounds); !s.ok()) return s.status();
    if (!(fit_settings.max_error >= 0))
      return invalid_argument("--max-error: expected a log error >= 0 (e.g. 0.09)");
  }
  if (write_fidelity && (gpu.empty() || !out))
    return invalid_argument("--write-fidelity needs --gpu and --out");
  if (fit && !engine_points) {
    // A fit moves one axis: the hardware profile or the engine's terms.
    const FitSpace space = parse_fit(*fit, bounds).value();
    for (const auto* f : space.fields)
      if (f->axis != space.fields.front()->axis)
        return invalid_argument(fmt::format(
            "--fit {}: {} is a {} term and {} an {} term: fit one axis at a time (the hardware "
            "profile, or the engine's terms)",
            *fit, space.fields.front()->name, perf::axis_name(space.fields.front()->axis), f->name,
            perf::axis_name(f->axis)));
  }
  if (engine_points && fit && *fit != "default") {
    auto space = parse_fit(*fit, bounds);
    if (!space.ok()) return space.status();
    for (const auto* f : space->fields)
      if (f->axis != perf::Axis::kEngine)
        return invalid_argument(std::string("--fit: ") + f->name +
                                " is a hardware term: an engine fit moves the engine's terms, "
                                "with the hardware profiles fixed");
  }
  if (cv && !engine_points)
    return invalid_argument("--cv cross-validates an engine fit: give --engine-points FILE");
  if (threads < 1) return invalid_argument(fmt::format("--threads {}: expected >= 1", threads));
  return ok_status();
}

std::vector<std::string> CalibrateOptions::source_ids() const {
  return sources ? split(*sources) : std::vector<std::string>{};
}

std::vector<ParamValue> CalibrateOptions::overrides() const {
  return parse_sets(sets).value();
}

FitSpace CalibrateOptions::fit_space() const {
  return fit ? parse_fit(*fit, bounds).value() : FitSpace{};
}

po::options_description calibrate_flags() {
  po::options_description opts("prima calibrate [options]");
  // clang-format off
  opts.add_options()
      ("help,h", "show this help")
      ("points", po::value<std::string>()->default_value("data/calibration/published.json"),
       "calibration set (JSON points)")
      ("gpu", po::value<std::string>(), "only this GPU's points (required with --fit)")
      ("profile", po::value<std::string>(), "profile file to use for its GPU")
      ("roofline", "the default shares for every GPU (no built-in profiles)")
      ("sources", po::value<std::string>(), "only points of these source IDs (e.g. C1,C8)")
      ("set", po::value<std::vector<std::string>>()->composing(), "KEY=VALUE parameter override")
      ("fit", po::value<std::string>(), "comma-separated parameters to fit")
      ("bound", po::value<std::vector<std::string>>()->composing(), "KEY=LO:HI fit bound")
      ("iterations", po::value<int>()->default_value(2000), "fit: Nelder-Mead iterations per start")
      ("max-error", po::value<double>()->default_value(0),
       "fit: penalise points whose |log error| passes this (e.g. 0.09; 0: none)")
      ("starts", po::value<int>()->default_value(40),
       "fit: random starting points besides the profile")
      ("out", po::value<std::string>(), "fit: profile file to write")
      ("write-fidelity", "with --gpu and --out: write the profile with its error on the points")
      ("json", "print JSON instead of a table")
      ("engine", po::value<std::string>(),
       "the engine of the step points (a built-in name or a profile file); with "
       "--engine-points, the engine profile to start from")
      ("engine-points", po::value<std::string>(),
       "FILE: published measurements of a serving engine (data/calibration/engines/); "
       "predicts them with the analytic run, --fit fits the engine's terms, --cv "
       "cross-validates by source")
      ("cv", "with --engine-points: leave one source out, fit on the rest, predict it")
      ("threads", po::value<int>()->default_value(2), "engine calibration: runs in parallel");
  // clang-format on
  return opts;
}

CalibrateOptions calibrate_options(const po::variables_map& vm) {
  CalibrateOptions o;
  get_flag(vm, {"points"}, &o.points_file);
  get_flag(vm, {"gpu"}, &o.gpu);
  get_flag(vm, {"profile"}, &o.profile);
  o.roofline = vm.count("roofline") > 0;
  get_flag(vm, {"sources"}, &o.sources);
  get_flag(vm, {"set"}, &o.sets);
  get_flag(vm, {"fit"}, &o.fit);
  get_flag(vm, {"bound"}, &o.bounds);
  get_flag(vm, {"iterations"}, &o.fit_settings.iterations);
  get_flag(vm, {"max-error"}, &o.fit_settings.max_error);
  get_flag(vm, {"starts"}, &o.fit_settings.starts);
  get_flag(vm, {"out"}, &o.out);
  o.write_fidelity = vm.count("write-fidelity") > 0;
  o.json = vm.count("json") > 0;
  get_flag(vm, {"engine"}, &o.engine);
  get_flag(vm, {"engine-points"}, &o.engine_points);
  o.cv = vm.count("cv") > 0;
  get_flag(vm, {"threads"}, &o.threads);
  return o;
}

}  // namespace prima::cli
