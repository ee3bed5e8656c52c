// `prima calibrate [--points FILE] [--gpu NAME] [--profile FILE] [--set k=v] [--fit k,k
// --out FILE] [--json]`: predicts the calibration set (published measurements,
// data/calibration/published.json) with a hardware profile and prints measured vs predicted
// per point and the error summary; --fit fits the named parameters of one GPU's profile to the
// points (cli/calibrate_fit.h) and writes the profile with its measured error. The flags are
// cli/calibrate_options.h.
#include <fmt/format.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "cli/calibrate_engine.h"
#include "cli/calibrate_fit.h"
#include "cli/calibrate_options.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "engine/config/json_reader.h"
#include "engine/perf/calibration.h"
#include "engine/perf/calibration_set.h"
#include "engine/perf/engine_profile.h"

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

// The calibration set, narrowed to --sources; an error when nothing is left or --gpu has no
// point.
Result<std::vector<perf::CalibrationPoint>> load_points(const CalibrateOptions& o) {
  PRIMA_ASSIGN_OR_RETURN(std::vector<perf::CalibrationPoint> points,
                         perf::load_calibration_points(o.points_file));
  if (o.sources) {
    const auto ids = o.source_ids();
    std::erase_if(points, [&](const perf::CalibrationPoint& p) {
      return std::find(ids.begin(), ids.end(), p.source) == ids.end();
    });
    if (points.empty())
      return invalid_argument("--sources: no point of " + o.points_file + " has those IDs");
  }
  if (!o.gpu.empty()) {
    bool any = false;
    for (const auto& p : points) any = any || p.gpu.name == o.gpu;
    if (!any)
      return invalid_argument(
          fmt::format("--gpu {}: no point of {} is on that GPU", o.gpu, o.points_file));
  }
  return points;
}

// The parameters each GPU of the points is predicted with: --profile for its GPU, else the
// built-in profile, else the default shares; then the --set overrides.
struct Profiles {
  std::map<std::string, perf::Efficiency> base;     // both axes: the hardware with the engine
  std::map<std::string, perf::Profile> profile_of;  // GPUs that have a profile
  perf::EngineProfile engine;                       // the engine the step points measured
};

// --engine, else the engine the step points name (they must agree).
Result<perf::EngineProfile> steps_engine(const CalibrateOptions& o,
                                         const std::vector<perf::CalibrationPoint>& points) {
  if (o.engine) {
    if (const perf::EngineProfile* e = perf::builtin_engine(*o.engine)) return *e;
    auto e = perf::load_engine_profile_file(*o.engine);
    if (!e.ok()) return invalid_argument("--engine: " + e.status().message());
    return *e;
  }
  std::string name;
  for (const auto& p : points) {
    if (p.kind != perf::CalibrationPoint::kStep) continue;
    if (!name.empty() && p.engine != name)
      return invalid_argument("the step points measure two engines (" + name + ", " + p.engine +
                              "): give --engine or --sources");
    name = p.engine;
  }
  return *perf::builtin_engine(name.empty() ? "splitwise-2023" : name);
}

Result<Profiles> load_profiles(const CalibrateOptions& o,
                               const std::vector<perf::CalibrationPoint>& points) {
  Profiles pr;
  PRIMA_ASSIGN_OR_RETURN(pr.engine, steps_engine(o, points));
  for (const auto& p : points) {
    if (pr.base.count(p.gpu.name)) continue;
    const perf::Profile* bp = o.roofline ? nullptr : perf::builtin_profile(p.gpu.name);
    pr.base[p.gpu.name] = bp ? bp->efficiency : perf::Efficiency{};
    if (bp) pr.profile_of[p.gpu.name] = *bp;
  }
  if (o.profile) {
    PRIMA_ASSIGN_OR_RETURN(perf::Profile prof, perf::load_profile_file(*o.profile));
    pr.base[prof.name] = prof.efficiency;
    pr.profile_of[prof.name] = prof;
  }
  for (auto& [name, e] : pr.base) e = perf::merge_axes(e, pr.engine, name);
  const std::vector<ParamValue> sets = o.overrides();
  for (auto& [name, e] : pr.base) {
    for (const auto& [f, v] : sets) e.*(f->member) = v;
    const std::string why = perf::check_efficiency(e);
    if (!why.empty()) return invalid_argument("--set: " + why);
  }
  return pr;
}

// --out after fitting engine terms: the engine profile with the GPU's fitted terms.
Status write_engine(const CalibrateOptions& o, const Profiles& pr) {
  perf::EngineProfile e = pr.engine;
  e.per_gpu[o.gpu] = pr.base.at(o.gpu);
  std::ofstream f(*o.out);
  if (!(f << perf::engine_profile_to_json(e).dump(1) << "\n"))
    return internal_error("cannot write " + *o.out);
  std::fprintf(stderr, "wrote %s\n", o.out->c_str());
  return ok_status();
}

// --out: the GPU's profile with its parameters and its error on the points ("fidelity").
Status write_profile(const CalibrateOptions& o, const Profiles& pr, const perf::Evaluation& ev) {
  const FitSpace space = o.fit_space();
  if (!space.fields.empty() && space.fields.front()->axis == perf::Axis::kEngine)
    return write_engine(o, pr);
  perf::Profile fitted = pr.profile_of.count(o.gpu) ? pr.profile_of.at(o.gpu) : perf::Profile{};
  fitted.name = o.gpu;
  fitted.efficiency = pr.base.at(o.gpu);
  std::set<std::string> ids;
  for (const auto& r : ev.points) ids.insert(r.point->source);
  std::string src;
  for (const auto& s : ids) src += (src.empty() ? "" : ", ") + s;
  fitted.fidelity.calibration_data = src + " in " + o.points_file;
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
  std::ofstream f(*o.out);
  if (!(f << j.dump(1) << "\n")) return internal_error("cannot write " + *o.out);
  std::fprintf(stderr, "wrote %s\n", o.out->c_str());
  return ok_status();
}

// Measured vs predicted per point and the summary: JSON (--json) or a table, on stdout.
void print_evaluation(const CalibrateOptions& o, const perf::Evaluation& ev) {
  if (o.json) {
    config::Json j{{"points_file", o.points_file}};
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
    return;
  }
  std::printf("%-52s %12s %12s %8s\n", "point", "measured_ms", "predicted_ms", "error");
  for (const auto& r : ev.points)
    std::printf("%-52s %12.3f %12.3f %+7.1f%%\n", r.point->id.c_str(), r.point->measured_s * 1e3,
                r.predicted_s * 1e3, r.error * 100);
  std::printf("%d points: median |error| %.1f%%, p90 %.1f%%, max %.1f%%\n", ev.fidelity.points,
              ev.fidelity.median_abs_error * 100, ev.fidelity.p90_abs_error * 100,
              ev.fidelity.max_abs_error * 100);
}

// Predicts (after fitting, with --fit) and prints the points; the exit code.
int run_calibrate(const CalibrateOptions& o) {
  if (o.engine_points) return run_engine_calibration(o);
  auto points = load_points(o);
  if (!points.ok()) return bad(points.status().message());
  auto profiles = load_profiles(o, *points);
  if (!profiles.ok()) return bad(profiles.status().message());
  Profiles& pr = *profiles;
  if (o.fit)
    pr.base[o.gpu] = fit_efficiency(*points, o.gpu, pr.base[o.gpu], o.fit_space(), o.fit_settings);
  const perf::Evaluation ev =
      perf::evaluate_points(*points, o.gpu, [&](const std::string& g) { return pr.base.at(g); });
  if (o.fit || o.write_fidelity)
    if (Status st = write_profile(o, pr, ev); !st.ok()) {
      std::fprintf(stderr, "prima calibrate: %s\n", st.message().c_str());
      return kExitFailure;
    }
  print_evaluation(o, ev);
  return kExitOk;
}

}  // namespace

int cmd_calibrate(const Args& args) {
  const po::options_description flags = calibrate_flags();
  po::variables_map vm;
  std::string error;
  if (!parse_flags(args, flags, &vm, &error)) return bad(error);
  if (vm.count("help")) {
    std::cout << flags << kHelp;
    return kExitOk;
  }
  const CalibrateOptions o = calibrate_options(vm);
  if (Status st = o.validate(); !st.ok()) return bad(st.message());
  return run_calibrate(o);
}

}  // namespace prima::cli
