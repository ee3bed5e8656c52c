// `prima calibrate [--points FILE] [--gpu NAME] [--profile FILE] [--set k=v] [--fit k,k
// --out FILE] [--json]`: predicts the calibration set (published measurements,
// data/calibration/published.json) with a hardware profile and prints measured vs predicted
// per point and the error summary; --fit fits the named parameters of one GPU's profile to the
// points (Nelder–Mead on squared log errors) and writes the profile with its measured error.
#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <set>

#include "cli/commands.h"
#include "engine/config/json_reader.h"
#include "engine/perf/calibration.h"
#include "engine/perf/calibration_set.h"
#include "engine/perf/fit.h"
#include "engine/replay/fit_params.h"

namespace po = boost::program_options;

namespace prima::cli {
namespace {

constexpr const char* kHelp = R"(
Predicts each point of the calibration set with the cost model and a profile: the built-in
profile of its GPU (topologies/profiles/), or --profile FILE for that file's GPU, or the
default shares when a GPU has none. --set changes one parameter for every GPU evaluated.

--fit fits the listed parameters of one GPU (--gpu) to its points: it minimises the mean
squared log error, starting from the profile's values, within physical bounds (shares in
(0, 1], latencies 0..100 ms; --bound key=lo:hi narrows one), and writes --out: the profile
with the fitted values and its error on the points ("fidelity"). --max-error E adds a steep
penalty, 100 (|r| - E)^2, for each point whose log error r passes E: the fit then trades a
little of the median for every point within the tolerance.

examples:
  prima calibrate                                  # every point, built-in profiles
  prima calibrate --gpu H100-SXM5-80GB --json
  prima calibrate --roofline                       # what the default shares predict
  prima calibrate --gpu A100-SXM4-80GB --set layer_launch_s=0.4ms
  prima calibrate --gpu H100-SXM5-80GB --profile my_h100.json
  prima calibrate --gpu H100-SXM5-80GB --fit gemm_compute,step_overhead_s,seq_overhead_s \
                  --out topologies/profiles/h100-sxm5-80gb.json

Exit codes: 0 ok, 2 bad input (file, key or value named).
)";

int bad(const std::string& msg) {
  std::fprintf(stderr, "prima calibrate: %s\n", msg.c_str());
  return kExitBadInput;
}

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

// The parameter's physical range (replay::fit_bound), with the open upper ends closed: random
// starts are drawn between the bounds. Latencies up to 100 ms, counts up to 65536.
perf::FitBound default_bounds(const perf::EfficiencyField& f) {
  perf::FitBound b = replay::fit_bound(f);
  if (!std::isfinite(b.hi)) b.hi = f.kind == perf::EfficiencyField::kSeconds ? 0.1 : 65536.0;
  return b;
}

}  // namespace

int cmd_calibrate(const Args& args) {
  po::options_description opts("prima calibrate [options]");
  opts.add_options()("help,h", "show this help")(
      "points", po::value<std::string>()->default_value("data/calibration/published.json"),
      "calibration set (JSON points)")("gpu", po::value<std::string>(),
                                       "only this GPU's points (required with --fit)")(
      "profile", po::value<std::string>(), "profile file to use for its GPU")(
      "roofline", "the default shares for every GPU (no built-in profiles)")(
      "sources", po::value<std::string>(), "only points of these source IDs (e.g. C1,C8)")(
      "set", po::value<std::vector<std::string>>()->composing(), "KEY=VALUE parameter override")(
      "fit", po::value<std::string>(), "comma-separated parameters to fit")(
      "bound", po::value<std::vector<std::string>>()->composing(), "KEY=LO:HI fit bound")(
      "iterations", po::value<int>()->default_value(2000), "fit: Nelder-Mead iterations per start")(
      "max-error", po::value<double>()->default_value(0),
      "fit: penalise points whose |log error| passes this (e.g. 0.09; 0: none)")(
      "starts", po::value<int>()->default_value(40),
      "fit: random starting points besides the profile")("out", po::value<std::string>(),
                                                         "fit: profile file to write")(
      "write-fidelity", "with --gpu and --out: write the profile with its error on the points")(
      "json", "print JSON instead of a table");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    return bad(e.what());
  }
  if (vm.count("help")) {
    std::cout << opts << kHelp;
    return kExitOk;
  }
  const std::string points_file = vm["points"].as<std::string>();
  auto points = perf::load_calibration_points(points_file);
  if (!points.ok()) return bad(points.status().message());
  if (vm.count("sources")) {
    const auto ids = split(vm["sources"].as<std::string>());
    std::erase_if(*points, [&](const perf::CalibrationPoint& p) {
      return std::find(ids.begin(), ids.end(), p.source) == ids.end();
    });
    if (points->empty()) return bad("--sources: no point of " + points_file + " has those IDs");
  }
  const std::string gpu = vm.count("gpu") ? vm["gpu"].as<std::string>() : "";
  if (!gpu.empty()) {
    bool any = false;
    for (const auto& p : *points) any = any || p.gpu.name == gpu;
    if (!any) return bad(fmt::format("--gpu {}: no point of {} is on that GPU", gpu, points_file));
  }

  // Parameters per GPU: --profile for its GPU, else the built-in profile, else defaults.
  std::map<std::string, perf::Efficiency> base;
  std::map<std::string, perf::Profile> profile_of;
  for (const auto& p : *points) {
    if (base.count(p.gpu.name)) continue;
    const perf::Profile* bp = vm.count("roofline") ? nullptr : perf::builtin_profile(p.gpu.name);
    base[p.gpu.name] = bp ? bp->efficiency : perf::Efficiency{};
    if (bp) profile_of[p.gpu.name] = *bp;
  }
  if (vm.count("profile")) {
    auto prof = perf::load_profile_file(vm["profile"].as<std::string>());
    if (!prof.ok()) return bad(prof.status().message());
    base[prof->name] = prof->efficiency;
    profile_of[prof->name] = *prof;
  }
  std::vector<std::pair<const perf::EfficiencyField*, double>> sets;
  if (vm.count("set"))
    for (const auto& kv : vm["set"].as<std::vector<std::string>>()) {
      const auto eq = kv.find('=');
      const perf::EfficiencyField* f =
          eq == std::string::npos ? nullptr : perf::find_efficiency_field(kv.substr(0, eq));
      double v = 0;
      if (!f)
        return bad(
            fmt::format("--set {}: expected PARAMETER=VALUE with a parameter of "
                        "docs/cost-model.md",
                        kv));
      if (!parse_value(*f, kv.substr(eq + 1), &v))
        return bad(
            fmt::format("--set {}: '{}' is not a value for {}", kv, kv.substr(eq + 1), f->name));
      sets.emplace_back(f, v);
    }
  for (auto& [name, e] : base) {
    for (const auto& [f, v] : sets) e.*(f->member) = v;
    const std::string why = perf::check_efficiency(e);
    if (!why.empty()) return bad("--set: " + why);
  }

  if (vm.count("fit")) {
    if (gpu.empty()) return bad("--fit needs --gpu: a profile is fitted for one GPU type");
    if (!vm.count("out")) return bad("--fit needs --out FILE: the profile to write");
    std::vector<const perf::EfficiencyField*> fields;
    std::vector<perf::FitBound> bounds;
    for (const auto& name : split(vm["fit"].as<std::string>())) {
      const perf::EfficiencyField* f = perf::find_efficiency_field(name);
      if (!f) return bad("--fit: unknown parameter '" + name + "' (see docs/cost-model.md)");
      fields.push_back(f);
      bounds.push_back(default_bounds(*f));
    }
    if (vm.count("bound"))
      for (const auto& kv : vm["bound"].as<std::vector<std::string>>()) {
        const auto eq = kv.find('='), colon = kv.find(':');
        bool ok = eq != std::string::npos && colon != std::string::npos && colon > eq;
        std::size_t i = 0;
        for (; ok && i < fields.size(); ++i)
          if (kv.substr(0, eq) == fields[i]->name) break;
        if (!ok || i == fields.size())
          return bad("--bound " + kv + ": expected KEY=LO:HI for a parameter given to --fit");
        double lo = 0, hi = 0;
        if (!parse_value(*fields[i], kv.substr(eq + 1, colon - eq - 1), &lo) ||
            !parse_value(*fields[i], kv.substr(colon + 1), &hi) || !(lo < hi))
          return bad("--bound " + kv + ": LO and HI must be values with LO < HI");
        bounds[i] = {lo, hi};
      }
    const perf::Efficiency start = base[gpu];
    std::vector<double> x0 = replay::get_params(start, fields);
    auto with = [&](const std::vector<double>& x) {
      perf::Efficiency e = start;
      replay::set_params(&e, fields, x);
      return e;
    };
    const double max_error = vm["max-error"].as<double>();
    if (!(max_error >= 0)) return bad("--max-error: expected a log error >= 0 (e.g. 0.09)");
    auto objective = [&](const std::vector<double>& x) {
      const perf::Efficiency e = with(x);
      double sum = 0;
      int n = 0;
      for (const auto& p : *points) {
        if (p.gpu.name != gpu) continue;
        const double r = std::log(perf::predict_point(p, e) / p.measured_s);
        sum += r * r;
        if (max_error > 0 && std::abs(r) > max_error)
          sum += 100 * (std::abs(r) - max_error) * (std::abs(r) - max_error);
        ++n;
      }
      return n ? sum / n : 0.0;
    };
    // A start on a bound would pin that coordinate (the change of variables is flat there):
    // start just inside.
    for (std::size_t i = 0; i < x0.size(); ++i) {
      const double span = bounds[i].hi - bounds[i].lo;
      x0[i] = std::clamp(x0[i], bounds[i].lo + 1e-3 * span, bounds[i].hi - 1e-3 * span);
    }
    // Multi-start: the profile's values, then --starts random points (fixed seed: the same
    // command gives the same profile), each refined by Nelder-Mead with restarts; the best
    // wins. The objective is cheap (microseconds per point) and not convex (the all-reduce
    // takes the fastest algorithm), so one descent is not enough.
    const int iterations = vm["iterations"].as<int>();
    std::mt19937_64 rng(1);
    auto random_start = [&] {
      std::vector<double> x(fields.size());
      for (std::size_t i = 0; i < x.size(); ++i) {
        const auto& b = bounds[i];
        const double u = std::uniform_real_distribution<double>(0, 1)(rng);
        if (fields[i]->kind == perf::EfficiencyField::kShare ||
            fields[i]->kind == perf::EfficiencyField::kOptionalShare) {
          x[i] = b.lo + (b.hi - b.lo) * (0.02 + 0.96 * u);
        } else {  // log-uniform over (max(lo, 1e-4 hi), hi)
          const double lo = std::max(b.lo, 1e-4 * b.hi) * 1.001, hi = b.hi * 0.999;
          x[i] = lo * std::pow(hi / lo, u);
        }
      }
      return x;
    };
    auto descend = [&](const std::vector<double>& x, int budget) {
      perf::NelderMeadOptions o;
      o.max_iterations = budget;
      o.restarts = 4;
      o.f_tolerance = 1e-14;
      auto r = perf::nelder_mead(objective, x, bounds, o);
      return r.ok() ? *r : perf::NelderMeadResult{x, objective(x), 0, 1, false, 0};
    };
    const int starts = vm["starts"].as<int>();
    perf::NelderMeadResult res = descend(x0, iterations);
    int evaluations = res.evaluations;
    for (int k = 0; k < starts; ++k) {
      perf::NelderMeadResult r = descend(random_start(), iterations);
      evaluations += r.evaluations;
      if (r.f < res.f) res = r;
      if ((k + 1) % 10 == 0 || k + 1 == starts)
        std::fprintf(stderr, "fit: %d/%d starts, rms log error %.4f\n", k + 1, starts,
                     std::sqrt(res.f));
    }
    res.evaluations = evaluations;
    base[gpu] = with(res.x);
    std::string names;
    for (const auto* f : fields) names += (names.empty() ? "" : ", ") + std::string(f->name);
    std::fprintf(stderr, "fit: %d evaluations; fitted %s\n", res.evaluations, names.c_str());
  }

  const perf::Evaluation ev =
      perf::evaluate_points(*points, gpu, [&](const std::string& g) { return base.at(g); });
  const bool write = vm.count("fit") || vm.count("write-fidelity");
  if (vm.count("write-fidelity") && (gpu.empty() || !vm.count("out")))
    return bad("--write-fidelity needs --gpu and --out");
  if (write) {
    perf::Profile fitted = profile_of.count(gpu) ? profile_of[gpu] : perf::Profile{};
    fitted.name = gpu;
    fitted.efficiency = base[gpu];
    std::set<std::string> ids;
    for (const auto& r : ev.points) ids.insert(r.point->source);
    std::string src;
    for (const auto& s : ids) src += (src.empty() ? "" : ", ") + s;
    fitted.fidelity.calibration_data = src + " in " + points_file;
    fitted.fidelity.points = ev.fidelity.points;
    fitted.fidelity.median_abs_error = ev.fidelity.median_abs_error;
    fitted.fidelity.p90_abs_error = ev.fidelity.p90_abs_error;
    fitted.fidelity.max_abs_error = ev.fidelity.max_abs_error;
    config::Json j = perf::profile_to_json(fitted);
    config::Json per_point = config::Json::array();
    for (const auto& r : ev.points)
      per_point.push_back({{"id", r.point->id},
                           {"measured_s", r.point->measured_s},
                           {"predicted_s", r.predicted_s},
                           {"error", r.error}});
    j["fidelity"]["per_point"] = per_point;
    const std::string out = vm["out"].as<std::string>();
    std::ofstream f(out);
    if (!(f << j.dump(1) << "\n")) {
      std::fprintf(stderr, "prima calibrate: cannot write %s\n", out.c_str());
      return kExitFailure;
    }
    std::fprintf(stderr, "wrote %s\n", out.c_str());
  }

  if (vm.count("json")) {
    config::Json j{{"points_file", points_file}};
    config::Json arr = config::Json::array();
    for (const auto& r : ev.points)
      arr.push_back({{"id", r.point->id},
                     {"gpu", r.point->gpu.name},
                     {"measured_s", r.point->measured_s},
                     {"predicted_s", r.predicted_s},
                     {"error", r.error}});
    j["points"] = arr;
    j["summary"] = {{"points", ev.fidelity.points},
                    {"median_abs_error", ev.fidelity.median_abs_error},
                    {"p90_abs_error", ev.fidelity.p90_abs_error},
                    {"max_abs_error", ev.fidelity.max_abs_error}};
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  std::printf("%-52s %12s %12s %8s\n", "point", "measured_ms", "predicted_ms", "error");
  for (const auto& r : ev.points)
    std::printf("%-52s %12.3f %12.3f %+7.1f%%\n", r.point->id.c_str(), r.point->measured_s * 1e3,
                r.predicted_s * 1e3, r.error * 100);
  std::printf("%d points: median |error| %.1f%%, p90 %.1f%%, max %.1f%%\n", ev.fidelity.points,
              ev.fidelity.median_abs_error * 100, ev.fidelity.p90_abs_error * 100,
              ev.fidelity.max_abs_error * 100);
  return kExitOk;
}

}  // namespace prima::cli
