// Engine calibration: predict, fit, cross-validate (engine_fit.h).
#include "engine/calib/engine_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <set>

#include "engine/calib/analytic_run.h"
#include "engine/metrics/summary.h"
#include "engine/model/model_spec.h"
#include "engine/scenario/scenario.h"

namespace prima::calib {
namespace {

using config::Json;

// The node a point ran on: a DGX-A100 for A100s, an HGX H100/H200-class node otherwise.
Json node_of(const std::string& gpu) {
  const bool ampere = gpu.rfind("A100", 0) == 0;
  return Json{{"base", ampere ? "dgx_a100" : "h200_node"}, {"gpu", gpu}, {"nodes", 1}};
}

// The metric a report gives for a point.
double metric_of(const nlohmann::ordered_json& rep, const BenchPoint& p) {
  const double secs = rep["simulated_seconds"].get<double>();
  const double out = rep["throughput"]["output_tokens_per_s"].get<double>();
  if (p.metric == "output_throughput") return out;
  if (p.metric == "request_throughput") return rep["throughput"]["requests_per_s"].get<double>();
  if (p.metric == "total_throughput") {
    // Fixed lengths only (load_bench_points checks nothing else asks for it): the prompt
    // tokens over the run's length, plus the output.
    const double in = p.input_tokens.is_number() ? p.input_tokens.get<double>() : 0;
    return out + rep["requests"]["completed"].get<double>() * in / std::max(secs, 1e-12);
  }
  const std::string stat = p.stat == "max" ? "max" : p.stat;
  return rep["latency_s"][p.metric][stat].get<double>();
}

// A point's scenario, parsed once; predictions swap in the candidate engine's terms.
struct Prepared {
  const BenchPoint* point = nullptr;
  std::unique_ptr<scenario::Scenario> sc;
  std::string failure;
};

// `engine`'s scheduler defaults and KV sizing go into each point's scenario (a profile read
// from a file may set its own); the terms are swapped in per prediction (run).
std::vector<Prepared> prepare(const std::vector<const BenchPoint*>& points,
                              const perf::EngineProfile& engine) {
  const Json inline_engine = perf::engine_profile_to_json(engine);
  std::vector<Prepared> out;
  for (const BenchPoint* p : points) {
    Prepared x;
    x.point = p;
    auto sc = scenario::parse_scenario(point_scenario(*p, inline_engine), p->id, ".");
    if (sc.ok())
      x.sc = std::make_unique<scenario::Scenario>(std::move(*sc));
    else
      x.failure = sc.status().message();
    out.push_back(std::move(x));
  }
  return out;
}

// Predicts every prepared point with `engine`'s terms, each point a work item of `pfor`.
Evaluation run(const std::vector<Prepared>& prepared, const perf::EngineProfile& engine,
               const ParallelFor& pfor) {
  Evaluation ev;
  ev.points.resize(prepared.size());
  pfor(prepared.size(), [&](std::size_t i) {
    const Prepared& x = prepared[i];
    PointPrediction& r = ev.points[i];
    r.point = x.point;
    if (!x.sc) {
      r.failure = x.failure;
      return;
    }
    scenario::Scenario sc = *x.sc;
    auto e = std::make_shared<perf::EngineProfile>(*sc.calibration.engine);
    e->terms = engine.terms;
    e->per_gpu = engine.per_gpu;
    sc.calibration.engine = e;
    auto rep = run_analytic(sc);
    if (!rep.ok()) {
      r.failure = rep.status().message();
      return;
    }
    r.predicted = metric_of(*rep, *x.point);
    r.error = (r.predicted - x.point->measured) / x.point->measured;
  });
  std::vector<double> all;
  std::map<std::string, std::vector<double>> by;
  for (const auto& r : ev.points) {
    if (!r.failure.empty()) continue;
    all.push_back(r.error);
    by[metric_group(r.point->metric)].push_back(r.error);
  }
  ev.all = summarize(all);
  for (const auto& [m, v] : by) ev.by_metric[m] = summarize(v);
  return ev;
}

// Huber loss of the log error: squared within 20%, linear beyond, so a few points the engine
// terms cannot reach (a mode the profile does not model) do not pull every other point.
double loss(double l) {
  constexpr double kDelta = 0.2;
  const double a = std::fabs(l);
  return a <= kDelta ? a * a : 2 * kDelta * a - kDelta * kDelta;
}

// The mean loss, each source weighing the same; a point that cannot be predicted costs as
// much as a factor of e.
double objective(const Evaluation& ev) {
  std::map<std::string, int> per_source;
  for (const auto& r : ev.points) ++per_source[r.point->source];
  double sum = 0, weight = 0;
  for (const auto& r : ev.points) {
    const double w = 1.0 / per_source[r.point->source];
    const double l =
        r.failure.empty() && r.predicted > 0 ? std::log(r.predicted / r.point->measured) : 1.0;
    sum += w * loss(l);
    weight += w;
  }
  return weight > 0 ? sum / weight : 0;
}

}  // namespace

perf::ErrorSummary summarize(const std::vector<double>& errors) {
  perf::ErrorSummary s;
  s.points = static_cast<int>(errors.size());
  if (errors.empty()) return s;
  std::vector<double> a;
  for (double e : errors) a.push_back(std::fabs(e));
  const metrics::Summary m = metrics::summarize(std::move(a));
  s.median_abs_error = m.p50;
  s.max_abs_error = m.max;
  return s;
}

namespace {
// The longest length a point's token spec allows: a number, or a distribution's "max" (0 when
// it states none).
double longest_tokens(const Json& t) {
  if (t.is_number()) return t.get<double>();
  if (t.is_object() && t.contains("max") && t["max"].is_number()) return t["max"].get<double>();
  return 0;
}
}  // namespace

Json point_scenario(const BenchPoint& p, const Json& engine) {
  // A server run is predicted from its first kServerRequests requests: its percentiles have
  // settled well before, and a fit runs it many times.
  constexpr int kServerRequests = 1000;
  const int requests = p.rate_rps > 0 ? std::min(p.requests, kServerRequests) : p.requests;
  Json w = {{"prompt_tokens", p.input_tokens},
            {"output_tokens", p.output_tokens},
            {"max_requests", requests}};
  if (p.rate_rps > 0) {
    w["arrival"] = {{"type", "poisson"}, {"rate_rps", p.rate_rps}};
  } else if (p.concurrency > 0) {
    w["arrival"] = {{"type", "closed_loop"}, {"users", p.concurrency}};
  } else {
    // All at once: a constant process fast enough that every request is in before the first
    // step ends.
    w["arrival"] = {{"type", "constant"}, {"rate_rps", 1e9}};
  }
  // Arrivals end with max_requests; the window only bounds them.
  const double duration = p.rate_rps > 0 ? (requests + 0.5) / p.rate_rps : 86400.0;
  Json sc = {{"name", p.id},
             {"model", p.model},
             {"quantization", p.quantization},
             {"engine", engine},
             {"topology", node_of(p.gpu)},
             {"deployment", {{"parallel_strategy", {{"tensor_parallel", p.tensor_parallel}}}}},
             {"workload", w},
             {"duration", duration},
             {"max_drain", 86400},
             {"seed", 1}};
  if (p.memory_utilization > 0) sc["deployment"]["gpu_memory_utilization"] = p.memory_utilization;
  if (!p.kv_cache_dtype.empty()) sc["deployment"]["kv_cache_dtype"] = p.kv_cache_dtype;
  if (p.scheduler.is_object()) sc["scheduler"] = p.scheduler;
  // trtllm-bench builds its engine with the dataset's longest sequence as max_seq_len (vLLM
  // and SGLang keep the model's context unless the source says otherwise).
  const double longest = longest_tokens(p.input_tokens) + longest_tokens(p.output_tokens);
  if (p.engine == "trtllm" && longest > 0 && !sc["scheduler"].contains("max_model_len"))
    sc["scheduler"]["max_model_len"] = static_cast<int>(std::ceil(longest));
  return sc;
}

Evaluation evaluate(const std::vector<const BenchPoint*>& points, const perf::EngineProfile& engine,
                    const ParallelFor& pfor) {
  return run(prepare(points, engine), engine, pfor);
}

EngineFitSpace default_engine_space(const std::string& engine) {
  EngineFitSpace s;
  auto add = [&](const char* name, double lo, double hi) {
    s.params.push_back({perf::find_efficiency_field(name), {lo, hi}});
  };
  // Physical ranges of a modern engine's host and launch costs (a priori, not fitted): a step's
  // scheduling up to 5 ms, a sequence's host work up to 20 us, a TP worker's hand-off up to
  // 2 ms, a graphed layer's kernel gaps up to 10 us.
  add("step_overhead_s", 0, 0.005);
  add("seq_overhead_s", 0, 2e-5);
  add("rank_overhead_s", 0, 0.002);
  add("graph_layer_overhead_s", 0, 1e-5);
  // An eager layer's host launch time: up to 1 ms (a Python forward of a layer's kernels).
  if (engine == "sglang") add("layer_launch_s", 0, 1e-3);
  return s;
}

Result<perf::EngineProfile> fit_engine(const std::vector<const BenchPoint*>& all,
                                       const perf::EngineProfile& start,
                                       const EngineFitSpace& space, const std::string& gpu,
                                       const ParallelFor& pfor) {
  // The fit runs every point many times: a run of more than kFitTokens output tokens (an
  // offline run of thousands of long requests, which the hardware and the KV sizing decide
  // more than the engine's terms) is predicted after the fit, not in it.
  constexpr double kFitTokens = 1e6;
  std::vector<const BenchPoint*> points;
  for (const BenchPoint* p : all) {
    const double out = p->output_tokens.is_number() ? p->output_tokens.get<double>()
                                                    : p->output_tokens.value("mean", 1000.0);
    if (p->requests * out <= kFitTokens) points.push_back(p);
  }
  if (points.empty()) points = all;
  const std::vector<Prepared> prepared = prepare(points, start);
  perf::EngineProfile base = start;
  perf::Efficiency& terms = gpu.empty() ? base.terms : base.per_gpu[gpu];
  if (!gpu.empty() && !start.per_gpu.count(gpu)) terms = start.terms;
  auto with = [&](const std::vector<double>& x) {
    perf::EngineProfile e = base;
    perf::Efficiency& t = gpu.empty() ? e.terms : e.per_gpu[gpu];
    for (std::size_t i = 0; i < space.params.size(); ++i) t.*(space.params[i].first->member) = x[i];
    return e;
  };
  std::vector<double> x0;
  std::vector<perf::FitBound> bounds;
  for (const auto& [f, b] : space.params) {
    x0.push_back(std::clamp(terms.*(f->member), b.lo, b.hi));
    bounds.push_back(b);
  }
  perf::NelderMeadOptions nm;
  nm.max_iterations = space.max_evaluations;
  nm.restarts = 2;
  std::vector<double> step;
  for (std::size_t i = 0; i < x0.size(); ++i)
    step.push_back(std::max(0.25 * x0[i], 0.05 * (bounds[i].hi - bounds[i].lo)));
  nm.initial_step = step;
  int evaluations = 0;
  auto f = [&](const std::vector<double>& x) {
    if (++evaluations > space.max_evaluations) return 1e9;
    return objective(run(prepared, with(x), pfor));
  };
  auto best = perf::nelder_mead(f, x0, bounds, nm);
  if (!best.ok()) return best.status();
  return with(best->x);
}

Result<CrossValidation> cross_validate(const std::vector<const BenchPoint*>& points,
                                       const perf::EngineProfile& start,
                                       const EngineFitSpace& space, const std::string& gpu,
                                       const ParallelFor& pfor, const std::set<std::string>* only) {
  CrossValidation cv;
  std::set<std::string> sources;
  for (const BenchPoint* p : points) sources.insert(p->source);
  cv.sources.assign(sources.begin(), sources.end());
  if (sources.size() < 2)
    return invalid_argument(fmt::format(
        "cross-validation leaves one source out and needs two sources; the points have {}",
        sources.size()));
  // Every fold starts from the middle of the space, whatever `start`'s terms: the figure depends
  // on the data and the space alone, so anyone can recompute it.
  perf::EngineProfile middle = start;
  perf::Efficiency& t = gpu.empty() ? middle.terms : middle.per_gpu[gpu];
  if (!gpu.empty() && !start.per_gpu.count(gpu)) t = start.terms;
  for (const auto& [f, b] : space.params) t.*(f->member) = (b.lo + b.hi) / 2;
  std::vector<double> all;
  std::map<std::string, std::vector<double>> by;
  for (const std::string& s : cv.sources) {
    if (only && !only->count(s)) continue;
    std::vector<const BenchPoint*> train, test;
    for (const BenchPoint* p : points) (p->source == s ? test : train).push_back(p);
    PRIMA_ASSIGN_OR_RETURN(perf::EngineProfile fitted, fit_engine(train, middle, space, gpu, pfor));
    Evaluation ev = evaluate(test, fitted, pfor);
    for (auto& r : ev.points) {
      if (r.failure.empty()) {
        all.push_back(r.error);
        by[metric_group(r.point->metric)].push_back(r.error);
      }
      cv.held_out.points.push_back(r);
    }
  }
  cv.held_out.all = summarize(all);
  for (const auto& [m, v] : by) cv.held_out.by_metric[m] = summarize(v);
  return cv;
}

void note_range(const std::vector<const BenchPoint*>& points, perf::EngineFidelity* f) {
  bool first = true;
  for (const BenchPoint* p : points) {
    auto sc = scenario::parse_scenario(point_scenario(*p, Json(p->engine)), p->id, ".");
    if (!sc.ok()) continue;
    const double params_b = sc->model.total_params() / 1e9;
    auto longest = [](const workload::LengthSpec& l) {
      return l.kind == workload::LengthSpec::Kind::kFixed ? l.value : static_cast<double>(l.max);
    };
    const int ctx = static_cast<int>(
        std::min(1e9, longest(sc->workload.prompt_tokens) + longest(sc->workload.output_tokens)));
    const int batch = p->requests;
    if (first) {
      f->min_params_b = f->max_params_b = params_b;
      f->min_tp = f->max_tp = p->tensor_parallel;
      first = false;
    }
    f->min_params_b = std::min(f->min_params_b, params_b);
    f->max_params_b = std::max(f->max_params_b, params_b);
    f->min_tp = std::min(f->min_tp, p->tensor_parallel);
    f->max_tp = std::max(f->max_tp, p->tensor_parallel);
    f->max_batch = std::max(f->max_batch, std::min(batch, sc->scheduler.max_num_seqs));
    f->max_context = std::max(f->max_context, ctx);
  }
}

}  // namespace prima::calib
