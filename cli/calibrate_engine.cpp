// Engine calibration on the command line (calibrate_engine.h).
#include "cli/calibrate_engine.h"

#include <fmt/format.h>

#include <cstdio>
#include <fstream>
#include <set>

#include "cli/commands.h"
#include "cli/thread_for.h"
#include "engine/calib/engine_fit.h"
#include "engine/perf/engine_profile.h"

namespace prima::cli {
namespace {

int bad(const std::string& msg) {
  std::fprintf(stderr, "prima calibrate: %s\n", msg.c_str());
  return kExitBadInput;
}

// The points of --engine-points, narrowed to --gpu and --sources.
Result<std::vector<const calib::BenchPoint*>> select(const CalibrateOptions& o,
                                                     const calib::BenchSet& set) {
  std::vector<const calib::BenchPoint*> out;
  const auto ids = o.source_ids();
  for (const auto& p : set.points) {
    if (!o.gpu.empty() && p.gpu != o.gpu) continue;
    if (o.sources && std::find(ids.begin(), ids.end(), p.source) == ids.end()) continue;
    out.push_back(&p);
  }
  if (out.empty())
    return invalid_argument(*o.engine_points + ": no point" +
                            (o.gpu.empty() ? "" : " on " + o.gpu) +
                            (o.sources ? " of sources " + *o.sources : ""));
  return out;
}

// --engine, else the built-in engine the points measured (they must agree).
Result<perf::EngineProfile> start_engine(const CalibrateOptions& o,
                                         const std::vector<const calib::BenchPoint*>& points) {
  if (o.engine) {
    if (const perf::EngineProfile* e = perf::builtin_engine(*o.engine)) return *e;
    auto e = perf::load_engine_profile_file(*o.engine);
    if (!e.ok()) return invalid_argument("--engine: " + e.status().message());
    return *e;
  }
  for (const auto* p : points)
    if (p->engine != points.front()->engine)
      return invalid_argument("the points measure two engines (" + points.front()->engine + ", " +
                              p->engine + "): give --engine or --sources");
  return *perf::builtin_engine(points.front()->engine);
}

calib::EngineFitSpace fit_space(const CalibrateOptions& o, const std::string& engine) {
  if (!o.fit || *o.fit == "default") return calib::default_engine_space(engine);
  calib::EngineFitSpace s;
  const FitSpace f = o.fit_space();
  for (std::size_t i = 0; i < f.fields.size(); ++i) s.params.push_back({f.fields[i], f.bounds[i]});
  return s;
}

void print_table(const char* title, const calib::Evaluation& ev) {
  std::printf("%s\n%-78s %12s %12s %8s\n", title, "point", "measured", "predicted", "error");
  for (const auto& r : ev.points) {
    if (!r.failure.empty()) {
      std::printf("%-78s %12.4g %12s  %s\n", r.point->id.c_str(), r.point->measured, "-",
                  r.failure.c_str());
      continue;
    }
    std::printf("%-78s %12.4g %12.4g %+7.1f%%\n", r.point->id.c_str(), r.point->measured,
                r.predicted, r.error * 100);
  }
  auto line = [](const std::string& what, const perf::ErrorSummary& s) {
    std::printf("  %-11s %3d points: median |error| %.1f%%, max %.1f%%\n", what.c_str(), s.points,
                s.median_abs_error * 100, s.max_abs_error * 100);
  };
  line("all", ev.all);
  for (const auto& [m, s] : ev.by_metric) line(m, s);
}

config::Json evaluation_json(const calib::Evaluation& ev) {
  config::Json pts = config::Json::array();
  for (const auto& r : ev.points) {
    config::Json j = {{"id", r.point->id},
                      {"source", r.point->source},
                      {"gpu", r.point->gpu},
                      {"metric", r.point->metric},
                      {"measured", r.point->measured}};
    if (r.failure.empty()) {
      j["predicted"] = r.predicted;
      j["error"] = r.error;
    } else {
      j["failure"] = r.failure;
    }
    pts.push_back(j);
  }
  config::Json by = config::Json::object();
  auto sj = [](const perf::ErrorSummary& s) {
    return config::Json{{"points", s.points},
                        {"median_abs_error", s.median_abs_error},
                        {"max_abs_error", s.max_abs_error}};
  };
  for (const auto& [m, s] : ev.by_metric) by[m] = sj(s);
  return {{"points", pts}, {"all", sj(ev.all)}, {"by_metric", by}};
}

// The engine's fidelity on each GPU of the points: the held-out errors of that GPU's points,
// the in-sample errors, the sources and the range.
void record_fidelity(const std::vector<const calib::BenchPoint*>& points,
                     const calib::Evaluation& in_sample, const calib::CrossValidation* cv,
                     perf::EngineProfile* e) {
  std::set<std::string> gpus;
  for (const auto* p : points) gpus.insert(p->gpu);
  for (const std::string& g : gpus) {
    perf::EngineFidelity f;
    std::vector<const calib::BenchPoint*> mine;
    std::set<std::string> sources;
    for (const auto* p : points)
      if (p->gpu == g) {
        mine.push_back(p);
        sources.insert(p->source);
      }
    f.sources.assign(sources.begin(), sources.end());
    calib::note_range(mine, &f);
    std::vector<double> ins, oos;
    std::map<std::string, std::vector<double>> by;
    for (const auto& r : in_sample.points)
      if (r.point->gpu == g && r.failure.empty()) ins.push_back(r.error);
    if (cv)
      for (const auto& r : cv->held_out.points)
        if (r.point->gpu == g && r.failure.empty()) {
          oos.push_back(r.error);
          by[calib::metric_group(r.point->metric)].push_back(r.error);
        }
    f.in_sample = calib::summarize(ins);
    f.out_of_sample = calib::summarize(oos);
    for (const auto& [m, v] : by) f.out_of_sample_by_metric[m] = calib::summarize(v);
    e->fidelity[g] = f;
  }
}

}  // namespace

int run_engine_calibration(const CalibrateOptions& o) {
  auto set = calib::load_bench_points(*o.engine_points);
  if (!set.ok()) return bad(set.status().message());
  auto points = select(o, *set);
  if (!points.ok()) return bad(points.status().message());
  auto start = start_engine(o, *points);
  if (!start.ok()) return bad(start.status().message());
  const calib::EngineFitSpace space = fit_space(o, start->name);
  perf::EngineProfile engine = *start;
  if (o.fit) {
    std::fprintf(stderr, "fitting %zu terms of %s to %zu points...\n", space.params.size(),
                 engine.name.c_str(), points->size());
    auto fitted = calib::fit_engine(*points, engine, space, o.gpu, thread_for(o.threads));
    if (!fitted.ok()) return bad(fitted.status().message());
    engine = *fitted;
  }
  const calib::Evaluation in_sample = calib::evaluate(*points, engine, thread_for(o.threads));
  std::optional<calib::CrossValidation> cv;
  if (o.cv) {
    std::fprintf(stderr, "cross-validating (leave one source out)...\n");
    auto c = calib::cross_validate(*points, *start, space, o.gpu, thread_for(o.threads));
    if (!c.ok()) return bad(c.status().message());
    cv = std::move(*c);
  }
  if (o.out) {
    record_fidelity(*points, in_sample, cv ? &*cv : nullptr, &engine);
    std::ofstream f(*o.out);
    if (!(f << perf::engine_profile_to_json(engine).dump(1) << "\n"))
      return bad("cannot write " + *o.out);
    std::fprintf(stderr, "wrote %s\n", o.out->c_str());
  }
  if (o.json) {
    config::Json j = {{"engine", engine.name},
                      {"points_file", *o.engine_points},
                      {"in_sample", evaluation_json(in_sample)}};
    if (cv) j["out_of_sample"] = evaluation_json(cv->held_out);
    std::printf("%s\n", j.dump(2).c_str());
    return kExitOk;
  }
  print_table(fmt::format("{}: in-sample (the fit's own points)", engine.name).c_str(), in_sample);
  if (cv)
    print_table(
        fmt::format("{}: out-of-sample (each source predicted by a fit to the others)", engine.name)
            .c_str(),
        cv->held_out);
  return kExitOk;
}

}  // namespace prima::cli
