// `prima replay`: measured runs -> replay on the simulator -> comparison (-> fit). See
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
#include "cli/replay_fit.h"
#include "cli/replay_output.h"
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

Status write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  if (!f || !(f << text).flush()) return invalid_argument(path + ": cannot write");
  return ok_status();
}

// Reads every measured file and checks it against the scenario; the first bad one is the error.
Status read_runs(const ReplayOptions& o, const scenario::Scenario& sc,
                 std::vector<ReplayRun>* runs) {
  runs->reserve(o.measured.size());  // results point into their runs: no reallocation
  for (const std::string& file : o.measured) {
    auto measured = replay::read_measured(file);
    if (!measured.ok()) return measured.status();
    if (Status st = replay::check_fits_scenario(*measured, sc); !st.ok()) return st;
    ReplayRun& run = runs->emplace_back();
    run.measured = std::move(*measured);
    run.measured_samples = replay::measured_samples(run.measured.requests);
    run.scenario = sc;
  }
  return ok_status();
}

// The run's folder, its replayed workload and the replay with the scenario's calibration.
int replay_run(const ReplayOptions& o, const perf::Resolved& resolved, const std::string& dir,
               ReplayRun* run) {
  run->out_dir = dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return bad("--out " + dir + ": cannot create directory: " + ec.message());
  const std::string trace = dir + "/trace.jsonl";
  if (Status st = replay::write_replay_trace(run->measured, trace); !st.ok())
    return bad(st.message());
  scenario::Scenario& sc = run->scenario;
  replay::use_replay_trace(&sc, fs::absolute(trace).string(), run->measured);
  if (!o.quiet)
    std::fprintf(stderr, "[prima] replaying %zu requests of %s on %s (%s)\n",
                 run->measured.requests.size(), run->measured.file.c_str(), sc.name.c_str(),
                 sc.topology.gpu.name.c_str());
  auto sim = sim::simulate_request_timings_in_child(sc, /*token_gaps=*/true);
  if (!sim.ok()) return replay_failed(sim.status());
  if (Status st = check_reproduced(run->measured, sim->requests); !st.ok())
    return replay_failed(st);
  ReplayResult& r = run->result;
  r.scenario_file = sc.file;
  r.scenario_name = sc.name;
  r.gpu = sc.topology.gpu.name;
  r.measured = &run->measured;
  r.simulated = std::move(sim->requests);
  r.measured_samples = run->measured_samples;
  r.simulated_samples = replay::simulated_samples(r.simulated);
  r.comparison = replay::compare(run->measured_samples, r.simulated_samples);
  r.fidelity = resolved.fidelity;
  r.simulated_s = sim->simulated_s;
  if (o.fit) {
    if (replay::fit_objective_terms(r.comparison) == 0)
      return bad(run->measured.file +
                 ": nothing to fit against: no completed request has a TTFT, TPOT or E2E "
                 "(and the simulation completed none to compare)");
    run->fit.initial_objective = replay::fit_objective(r.comparison);
  }
  return kExitOk;
}

// comparison.json, comparison.html and per_request.csv of one run.
Status write_run(const ReplayRun& run) {
  const ReplayResult& r = run.result;
  for (Status st : {write_text(run.out_dir + "/comparison.json", comparison_json(r).dump(2) + "\n"),
                    write_text(run.out_dir + "/comparison.html", comparison_html(r)),
                    write_per_request_csv(r, run.out_dir + "/per_request.csv")})
    if (!st.ok()) return st;
  return ok_status();
}

}  // namespace

int run_replay(const ReplayOptions& o) {
  const auto t0 = Clock::now();
  if (Status st = o.validate(); !st.ok()) return bad(st.message());
  replay::FitParams params;
  if (o.fit) {
    params = *replay::parse_fit_params(o.fit_params.empty() ? replay::kDefaultFitParams
                                                            : o.fit_params);  // validated
  }
  auto loaded = scenario::load_scenario(o.scenario, o.sets);
  if (!loaded.ok()) return bad(loaded.status().message());
  const scenario::Scenario sc = std::move(*loaded);
  std::vector<ReplayRun> runs;
  if (Status st = read_runs(o, sc, &runs); !st.ok()) return bad(st.message());
  const bool joint = runs.size() > 1;

  const std::string out_dir = o.out_dir.empty() ? "out/replay-" + sc.name : o.out_dir;
  const perf::Resolved resolved = perf::resolve(sc.calibration, sc.topology.gpu.name);
  std::vector<std::string> dirs;  // relative to out_dir
  for (std::size_t k = 0; k < runs.size(); ++k) {
    dirs.push_back(joint ? fmt::format("run{}", k + 1) : ".");
    const std::string dir = joint ? out_dir + "/" + dirs.back() : out_dir;
    if (int rc = replay_run(o, resolved, dir, &runs[k]); rc != kExitOk) return rc;
  }
  if (o.fit) {
    if (int rc = fit_runs(o, resolved.efficiency, params, &runs); rc != kExitOk) return rc;
    for (ReplayRun& run : runs) run.result.fit = &run.fit;
  }
  const double wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<const ReplayResult*> results;
  for (ReplayRun& run : runs) {
    run.result.wall_s = wall_s;
    results.push_back(&run.result);
    if (Status st = write_run(run); !st.ok()) return replay_failed(internal_error(st.message()));
  }
  if (o.fit) {
    if (Status st = write_text(out_dir + "/profile.json",
                               perf::profile_to_json(runs.front().fit.profile).dump(2) + "\n");
        !st.ok())
      return replay_failed(internal_error(st.message()));
    perf::EngineProfile engine;
    if (int rc = engine_from_fit(o, resolved.efficiency, params, runs, &engine); rc != kExitOk)
      return rc;
    if (Status st = write_text(out_dir + "/engine.json",
                               perf::engine_profile_to_json(engine).dump(2) + "\n");
        !st.ok())
      return replay_failed(internal_error(st.message()));
  }
  nlohmann::ordered_json json;
  if (joint) {
    json = joint_fit_json(results, dirs, wall_s);
    if (Status st = write_text(out_dir + "/fit.json", json.dump(2) + "\n"); !st.ok())
      return replay_failed(internal_error(st.message()));
  } else {
    json = comparison_json(runs.front().result);
  }
  std::string summary;
  for (const ReplayRun& run : runs) summary += replay_summary(run.result, run.out_dir);
  if (joint) summary += joint_fit_summary(results, out_dir);
  if (o.json) {
    std::cout << json.dump(2) << "\n";
    if (!o.quiet) std::cerr << summary;
  } else {
    std::cout << summary;
  }
  return kExitOk;
}

}  // namespace prima::cli
