// `prima replay --fit` over one or several measured runs (replay_fit.h).
#include "cli/replay_fit.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>

#include "backends/sim/request_timings.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "engine/perf/fit.h"
#include "engine/replay/replay_scenario.h"

namespace prima::cli {
namespace {

using Clock = std::chrono::steady_clock;

std::string param_list(const replay::FitParams& p, const std::vector<double>& x) {
  std::string s;
  for (std::size_t i = 0; i < p.size(); ++i)
    s += fmt::format("{}{}={:.6g}", i ? " " : "", p[i]->name, x[i]);
  return s;
}

// The run's scenario with the parameters at `x`.
scenario::Scenario with_params(const ReplayRun& run, const perf::Efficiency& start,
                               const replay::FitParams& params, const std::vector<double>& x) {
  scenario::Scenario s = run.scenario;
  perf::Efficiency e = start;
  replay::set_params(&e, params, x);
  replay::set_gpu_efficiency(&s, e);
  return s;
}

// "a.jsonl (30 requests), b.jsonl (60 requests)"
std::string run_list(const std::vector<ReplayRun>& runs) {
  std::string s;
  for (const ReplayRun& r : runs)
    s += fmt::format("{}{} ({} requests)", s.empty() ? "" : ", ", r.measured.file,
                     r.measured.requests.size());
  return s;
}

// DIR/profile.json: every parameter, the fitted ones included, and the fitted runs' own error.
perf::Profile fitted_profile(const std::vector<ReplayRun>& runs, const replay::FitParams& params,
                             const perf::Efficiency& e,
                             const std::vector<replay::Comparison>& fitted) {
  const scenario::Scenario& sc = runs.front().scenario;
  std::string names;
  for (const auto* f : params) names += std::string(names.empty() ? "" : ",") + f->name;
  perf::Profile p;
  p.name = sc.topology.gpu.name;
  p.efficiency = e;
  const std::string figures = "TTFT, TPOT, ITL, E2E, queue at mean, p50, p90, p99";
  if (runs.size() == 1) {
    const replay::MeasuredRun& m = runs.front().measured;
    p.description =
        fmt::format("{} fitted by prima replay --fit to {} on scenario {}", names, m.file, sc.name);
    p.source = fmt::format("prima replay --fit --fit-params {}: {} ({} requests)", names, m.file,
                           m.requests.size());
    p.fidelity = replay::comparison_fidelity(
        fitted.front(), fmt::format("replay of {} ({} requests) on {}: {}", m.file,
                                    m.requests.size(), sc.name, figures));
  } else {
    std::string files;
    for (const ReplayRun& r : runs) files += (files.empty() ? "" : ", ") + r.measured.file;
    p.description = fmt::format(
        "{} fitted by prima replay --fit to {} runs together ({}) on "
        "scenario {}",
        names, runs.size(), files, sc.name);
    p.source = fmt::format("prima replay --fit --fit-params {}: {}", names, run_list(runs));
    p.fidelity = replay::comparison_fidelity(
        fitted, fmt::format("replays of {} on {}: {}, pooled", run_list(runs), sc.name, figures));
  }
  p.fidelity.profile = p.name;
  p.fidelity.source = p.source;
  return p;
}

}  // namespace

int replay_failed(const Status& st) {
  return fail_with("prima replay", st, BadInput::kAlsoPrecondition);
}

Status check_reproduced(const replay::MeasuredRun& m,
                        const std::vector<replay::SimulatedRequest>& s) {
  if (s.size() != m.requests.size())
    return internal_error(fmt::format("the replay simulated {} requests, the file has {}", s.size(),
                                      m.requests.size()));
  for (std::size_t i = 0; i < s.size(); ++i) {
    const auto& a = m.requests[i];
    const auto& b = s[i];
    if (b.id != i + 1 || b.arrival_s != a.arrival_s || b.prompt_tokens != a.prompt_tokens ||
        (b.ok && b.output_tokens != std::max(1, a.output_tokens)))
      return internal_error(fmt::format(
          "{}:{}: the replay did not reproduce this request (simulated id {}: arrival {} s, {} + "
          "{} tokens; measured: arrival {} s, {} + {} tokens)",
          m.file, a.line, b.id, b.arrival_s, b.prompt_tokens, b.output_tokens, a.arrival_s,
          a.prompt_tokens, a.output_tokens));
  }
  return ok_status();
}

int fit_runs(const ReplayOptions& o, const perf::Efficiency& start, const replay::FitParams& params,
             std::vector<ReplayRun>* runs) {
  const auto t0 = Clock::now();
  const int n_runs = static_cast<int>(runs->size());
  ReplayFit shared;
  shared.params = params;
  shared.max_iterations = o.iterations();
  std::vector<perf::FitBound> bounds;
  perf::NelderMeadOptions nm;
  nm.max_iterations = o.iterations();
  // Two parameters that trade off (a per-step overhead against a bandwidth share: both set the
  // decode step time) make a long narrow valley, where a simplex can collapse short of the
  // minimum: start again from the best point while iterations remain.
  nm.restarts = 10;
  for (const auto* f : params) {
    bounds.push_back(replay::fit_bound(*f));
    const double v = std::clamp(start.*(f->member), bounds.back().lo, bounds.back().hi);
    shared.initial.push_back(v);
    nm.initial_step.push_back(replay::fit_initial_step(*f, v));
  }
  Status first_error;
  auto objective = [&](const std::vector<double>& x) {
    std::vector<replay::Comparison> cs;
    for (const ReplayRun& run : *runs) {
      auto sim = sim::simulate_request_timings_in_child(with_params(run, start, params, x),
                                                        /*token_gaps=*/false);
      if (!sim.ok()) {
        if (first_error.ok()) first_error = sim.status();
        return std::numeric_limits<double>::quiet_NaN();
      }
      cs.push_back(replay::compare(run.measured_samples, replay::simulated_samples(sim->requests)));
    }
    return replay::joint_fit_objective(cs);
  };
  if (!o.quiet) {
    std::fprintf(stderr, "[fit] %s%s: %d iterations at most, from %s\n",
                 fmt::format("{} parameter(s)", params.size()).c_str(),
                 n_runs > 1 ? fmt::format(", {} runs together", n_runs).c_str() : "",
                 o.iterations(), param_list(params, shared.initial).c_str());
    nm.on_iteration = [&](const perf::NelderMeadIteration& it) {
      const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
      std::fprintf(stderr, "[fit] iter %d/%d  objective %.6g  %s  (%s, %d simulations, %.1f s)\n",
                   it.iteration, o.iterations(), it.best_f, param_list(params, it.best_x).c_str(),
                   it.step, it.evaluations * n_runs, wall);
    };
  }
  auto res = perf::nelder_mead(objective, shared.initial, bounds, nm);
  if (!res.ok()) {
    std::fprintf(stderr, "prima replay: %s\n", res.status().message().c_str());
    return kExitBadInput;
  }
  if (!std::isfinite(res->f))
    return replay_failed(first_error.ok() ? internal_error("every fit evaluation failed")
                                          : first_error);
  shared.fitted = res->x;
  shared.iterations = res->iterations;
  shared.evaluations = res->evaluations;
  shared.converged = res->converged;

  // Every run again with the fitted values and every token's gap, for its comparison and page.
  std::vector<replay::Comparison> fitted;
  for (ReplayRun& run : *runs) {
    auto sim = sim::simulate_request_timings_in_child(
        with_params(run, start, params, shared.fitted), /*token_gaps=*/true);
    if (!sim.ok()) return replay_failed(sim.status());
    if (Status st = check_reproduced(run.measured, sim->requests); !st.ok())
      return replay_failed(st);
    run.fit.simulated = std::move(sim->requests);
    run.fit.samples = replay::simulated_samples(run.fit.simulated);
    run.fit.comparison = replay::compare(run.measured_samples, run.fit.samples);
    run.fit.fitted_objective = replay::fit_objective(run.fit.comparison);
    fitted.push_back(run.fit.comparison);
  }
  perf::Efficiency e = start;
  replay::set_params(&e, params, shared.fitted);
  shared.profile = fitted_profile(*runs, params, e, fitted);
  shared.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (n_runs > 1) {
    std::vector<replay::Comparison> initial;
    for (const ReplayRun& run : *runs) {
      shared.joint_files.push_back(run.measured.file);
      initial.push_back(run.result.comparison);
    }
    shared.joint_initial_objective = replay::joint_fit_objective(initial);
    shared.joint_fitted_objective = res->f;
  }
  for (ReplayRun& run : *runs) {
    ReplayFit& f = run.fit;
    f.params = shared.params;
    f.initial = shared.initial;
    f.fitted = shared.fitted;
    f.iterations = shared.iterations;
    f.evaluations = shared.evaluations;
    f.max_iterations = shared.max_iterations;
    f.converged = shared.converged;
    f.wall_s = shared.wall_s;
    f.profile = shared.profile;
    f.joint_files = shared.joint_files;
    f.joint_initial_objective = shared.joint_initial_objective;
    f.joint_fitted_objective = shared.joint_fitted_objective;
  }
  // With one run the objective Nelder–Mead reached is the run's own (as always reported).
  if (n_runs == 1) runs->front().fit.fitted_objective = res->f;
  return kExitOk;
}

}  // namespace prima::cli

namespace prima::cli {
namespace {

// The relative errors of the figures a comparison holds, by metric name.
void collect_errors(const replay::Comparison& c, std::vector<double>* all,
                    std::map<std::string, std::vector<double>>* by) {
  for (int m = 0; m < replay::kNumMetrics; ++m)
    for (const auto& sc : c.metrics[m].stats)
      if (std::isfinite(sc.error)) {
        all->push_back(sc.error);
        (*by)[replay::metric_name(static_cast<replay::Metric>(m))].push_back(sc.error);
      }
}

perf::ErrorSummary summary_of(std::vector<double> errors) {
  perf::Fidelity f;
  perf::summarize_errors(errors, &f);
  perf::ErrorSummary s;
  s.points = f.points;
  s.median_abs_error = f.median_abs_error;
  s.max_abs_error = f.max_abs_error;
  return s;
}

}  // namespace

int engine_from_fit(const ReplayOptions& o, const perf::Efficiency& start,
                    const replay::FitParams& params, const std::vector<ReplayRun>& runs,
                    perf::EngineProfile* out) {
  const scenario::Scenario& sc = runs.front().scenario;
  const std::string gpu = sc.topology.gpu.name;
  perf::EngineProfile e = sc.calibration.engine ? *sc.calibration.engine : perf::EngineProfile{};
  perf::Efficiency fitted = start;
  replay::set_params(&fitted, params, runs.front().fit.fitted);
  e.name = e.name + " (fitted by prima replay)";
  e.source = "prima replay --fit: " + run_list(runs) + " on " + sc.name;
  e.per_gpu[gpu] = fitted;
  e.fidelity.clear();
  perf::EngineFidelity f;
  std::vector<double> in;
  std::map<std::string, std::vector<double>> unused;
  for (const ReplayRun& r : runs) {
    collect_errors(r.fit.comparison, &in, &unused);
    f.sources.push_back(r.measured.file);
  }
  f.in_sample = summary_of(in);
  if (runs.size() > 1) {
    // Leave one run out: fit to the others, replay the one left out.
    std::vector<double> all;
    std::map<std::string, std::vector<double>> by;
    for (std::size_t i = 0; i < runs.size(); ++i) {
      std::vector<ReplayRun> others;
      others.reserve(runs.size());
      for (std::size_t k = 0; k < runs.size(); ++k)
        if (k != i) others.push_back(runs[k]);
      ReplayOptions quiet = o;
      quiet.quiet = true;
      if (int rc = fit_runs(quiet, start, params, &others); rc != kExitOk) return rc;
      auto sim = sim::simulate_request_timings_in_child(
          with_params(runs[i], start, params, others.front().fit.fitted), false);
      if (!sim.ok()) return replay_failed(sim.status());
      collect_errors(
          replay::compare(runs[i].measured_samples, replay::simulated_samples(sim->requests)), &all,
          &by);
    }
    f.out_of_sample = summary_of(all);
    for (auto& [m, v] : by) f.out_of_sample_by_metric[m] = summary_of(v);
  }
  e.fidelity[gpu] = f;
  *out = e;
  return kExitOk;
}

}  // namespace prima::cli
