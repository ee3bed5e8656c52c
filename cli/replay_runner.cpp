// `prima replay`: measured run -> replay on the simulator -> comparison (-> fit). See
// replay_runner.h and docs/replay.md.
#include "cli/replay_runner.h"

#include <fmt/format.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "backends/sim/request_timings.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/replay_output.h"
#include "engine/perf/fit.h"
#include "engine/replay/compare.h"
#include "engine/replay/fit_params.h"
#include "engine/replay/measured.h"
#include "engine/replay/replay_scenario.h"
#include "engine/scenario/scenario.h"

namespace fs = std::filesystem;

namespace prima::cli {
namespace {

using Clock = std::chrono::steady_clock;

int bad(const std::string& msg) {
  std::fprintf(stderr, "prima replay: %s\n", msg.c_str());
  return kExitBadInput;
}

// A simulation's failure: bad input when the scenario could not run as given, else a failure.
int failed(const Status& st) {
  return fail_with("prima replay", st, BadInput::kAlsoPrecondition);
}

// The simulator must have replayed what was measured: the same number of requests, the same
// arrival times and lengths (a 0-token output is generated as 1 token, as a server would).
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

std::string param_list(const replay::FitParams& p, const std::vector<double>& x) {
  std::string s;
  for (std::size_t i = 0; i < p.size(); ++i)
    s += fmt::format("{}{}={:.6g}", i ? " " : "", p[i]->name, x[i]);
  return s;
}

// --fit: Nelder–Mead over the chosen parameters; each evaluation simulates the replay with
// them (in a child process) and scores it with replay::fit_objective.
int run_fit(const ReplayOptions& o, const scenario::Scenario& sc, const perf::Efficiency& start,
            const replay::FitParams& params, const replay::MeasuredRun& measured,
            const replay::Samples& measured_samples, ReplayFit* fit) {
  const auto t0 = Clock::now();
  fit->params = params;
  fit->max_iterations = o.fit_iterations;
  std::vector<perf::FitBound> bounds;
  perf::NelderMeadOptions nm;
  nm.max_iterations = o.fit_iterations;
  // Two parameters that trade off (a per-step overhead against a bandwidth share: both set the
  // decode step time) make a long narrow valley, where a simplex can collapse short of the
  // minimum: start again from the best point while iterations remain.
  nm.restarts = 10;
  for (const auto* f : params) {
    bounds.push_back(replay::fit_bound(*f));
    const double v = std::clamp(start.*(f->member), bounds.back().lo, bounds.back().hi);
    fit->initial.push_back(v);
    nm.initial_step.push_back(replay::fit_initial_step(*f, v));
  }
  Status first_error;
  auto objective = [&](const std::vector<double>& x) {
    scenario::Scenario s = sc;
    perf::Efficiency e = start;
    replay::set_params(&e, params, x);
    replay::set_gpu_efficiency(&s, e);
    auto run = sim::simulate_request_timings_in_child(s, /*token_gaps=*/false);
    if (!run.ok()) {
      if (first_error.ok()) first_error = run.status();
      return std::numeric_limits<double>::quiet_NaN();
    }
    return replay::fit_objective(
        replay::compare(measured_samples, replay::simulated_samples(run->requests)));
  };
  if (!o.quiet) {
    std::fprintf(stderr, "[fit] %s: %d iterations at most, from %s\n",
                 fmt::format("{} parameter(s)", params.size()).c_str(), o.fit_iterations,
                 param_list(params, fit->initial).c_str());
    nm.on_iteration = [&](const perf::NelderMeadIteration& it) {
      const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
      std::fprintf(stderr, "[fit] iter %d/%d  objective %.6g  %s  (%s, %d simulations, %.1f s)\n",
                   it.iteration, o.fit_iterations, it.best_f, param_list(params, it.best_x).c_str(),
                   it.step, it.evaluations, wall);
    };
  }
  auto res = perf::nelder_mead(objective, fit->initial, bounds, nm);
  if (!res.ok()) return bad(res.status().message());
  if (!std::isfinite(res->f))
    return failed(first_error.ok() ? internal_error("every fit evaluation failed") : first_error);
  fit->fitted = res->x;
  fit->fitted_objective = res->f;
  fit->iterations = res->iterations;
  fit->evaluations = res->evaluations;
  fit->converged = res->converged;

  // The fitted run again, with every token's gap, for the comparison and the page.
  scenario::Scenario s = sc;
  perf::Efficiency e = start;
  replay::set_params(&e, params, fit->fitted);
  replay::set_gpu_efficiency(&s, e);
  auto run = sim::simulate_request_timings_in_child(s, /*token_gaps=*/true);
  if (!run.ok()) return failed(run.status());
  if (Status st = check_reproduced(measured, run->requests); !st.ok()) return failed(st);
  fit->simulated = std::move(run->requests);
  fit->samples = replay::simulated_samples(fit->simulated);
  fit->comparison = replay::compare(measured_samples, fit->samples);
  fit->wall_s = std::chrono::duration<double>(Clock::now() - t0).count();

  std::string names;
  for (const auto* f : params) names += std::string(names.empty() ? "" : ",") + f->name;
  perf::Profile& p = fit->profile;
  p.name = sc.topology.gpu.name;
  p.description = fmt::format("{} fitted by prima replay --fit to {} on scenario {}", names,
                              measured.file, sc.name);
  p.source = fmt::format("prima replay --fit --fit-params {}: {} ({} requests)", names,
                         measured.file, measured.requests.size());
  p.efficiency = e;
  p.fidelity = replay::comparison_fidelity(
      fit->comparison,
      fmt::format("replay of {} ({} requests) on {}: TTFT, TPOT, ITL, E2E, queue at mean, p50, "
                  "p90, p99",
                  measured.file, measured.requests.size(), sc.name));
  p.fidelity.profile = p.name;
  p.fidelity.source = p.source;
  return kExitOk;
}

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f || !(f << text).flush()) return invalid_argument(path + ": cannot write");
  return ok_status();
}

}  // namespace

int run_replay(const ReplayOptions& o) {
  const auto t0 = Clock::now();
  replay::FitParams params;
  if (o.fit) {
    auto p =
        replay::parse_fit_params(o.fit_params.empty() ? replay::kDefaultFitParams : o.fit_params);
    if (!p.ok()) return bad(p.status().message());
    params = std::move(*p);
  }
  auto loaded = scenario::load_scenario(o.scenario, o.sets);
  if (!loaded.ok()) return bad(loaded.status().message());
  scenario::Scenario sc = std::move(*loaded);
  auto measured = replay::read_measured(o.measured);
  if (!measured.ok()) return bad(measured.status().message());
  if (Status st = replay::check_fits_scenario(*measured, sc); !st.ok()) return bad(st.message());
  const replay::Samples measured_samples = replay::measured_samples(measured->requests);

  const std::string out_dir = o.out_dir.empty() ? "out/replay-" + sc.name : o.out_dir;
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return bad("--out " + out_dir + ": cannot create directory: " + ec.message());
  const std::string trace = out_dir + "/trace.jsonl";
  if (Status st = replay::write_replay_trace(*measured, trace); !st.ok()) return bad(st.message());
  replay::use_replay_trace(&sc, fs::absolute(trace).string(), *measured);
  const perf::Resolved resolved = perf::resolve(sc.calibration, sc.topology.gpu.name);

  if (!o.quiet)
    std::fprintf(stderr, "[prima] replaying %zu requests of %s on %s (%s)\n",
                 measured->requests.size(), measured->file.c_str(), sc.name.c_str(),
                 sc.topology.gpu.name.c_str());
  auto run = sim::simulate_request_timings_in_child(sc, /*token_gaps=*/true);
  if (!run.ok()) return failed(run.status());
  if (Status st = check_reproduced(*measured, run->requests); !st.ok()) return failed(st);

  ReplayResult r;
  r.scenario_file = sc.file;
  r.scenario_name = sc.name;
  r.gpu = sc.topology.gpu.name;
  r.measured = &*measured;
  r.simulated = std::move(run->requests);
  r.measured_samples = measured_samples;
  r.simulated_samples = replay::simulated_samples(r.simulated);
  r.comparison = replay::compare(measured_samples, r.simulated_samples);
  r.fidelity = resolved.fidelity;
  r.simulated_s = run->simulated_s;

  ReplayFit fit;
  if (o.fit) {
    if (replay::fit_objective_terms(r.comparison) == 0)
      return bad(measured->file +
                 ": nothing to fit against: no completed request has a TTFT, TPOT or E2E "
                 "(and the simulation completed none to compare)");
    fit.initial_objective = replay::fit_objective(r.comparison);
    if (int rc = run_fit(o, sc, resolved.efficiency, params, *measured, measured_samples, &fit);
        rc != kExitOk)
      return rc;
    r.fit = &fit;
  }
  r.wall_s = std::chrono::duration<double>(Clock::now() - t0).count();

  const auto json = comparison_json(r);
  for (Status st : {write_text(out_dir + "/comparison.json", json.dump(2) + "\n"),
                    write_text(out_dir + "/comparison.html", comparison_html(r)),
                    write_per_request_csv(r, out_dir + "/per_request.csv")})
    if (!st.ok()) return failed(internal_error(st.message()));
  if (o.fit) {
    if (Status st = write_text(out_dir + "/profile.json",
                               perf::profile_to_json(fit.profile).dump(2) + "\n");
        !st.ok())
      return failed(internal_error(st.message()));
  }
  const std::string summary = replay_summary(r, out_dir);
  if (o.json) {
    std::cout << json.dump(2) << "\n";
    if (!o.quiet) std::cerr << summary;
  } else {
    std::cout << summary;
  }
  return kExitOk;
}

}  // namespace prima::cli
