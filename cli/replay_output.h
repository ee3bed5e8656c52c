// What `prima replay` writes and prints: comparison.json, per_request.csv, the summary on the
// terminal and comparison.html (replay_html.cpp). Everything the outputs need is gathered in a
// ReplayResult by the driver (replay_runner.cpp). Pure functions apart from writing files.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/perf/calibration.h"
#include "engine/replay/compare.h"
#include "engine/replay/fit_params.h"
#include "engine/replay/measured.h"

namespace prima::cli {

struct ReplayFit {
  replay::FitParams params;
  std::vector<double> initial, fitted;
  double initial_objective = 0, fitted_objective = 0;
  int iterations = 0, evaluations = 0, max_iterations = 0;
  bool converged = false;
  double wall_s = 0;
  std::vector<replay::SimulatedRequest> simulated;  // the run with the fitted values
  replay::Samples samples;
  replay::Comparison comparison;
  perf::Profile profile;  // what DIR/profile.json holds
  // A fit to several runs together (--measured more than once): every run's file and the
  // objective over them all (replay::joint_fit_objective); empty with one run. The
  // initial/fitted objectives above are then this run's.
  std::vector<std::string> joint_files;
  double joint_initial_objective = 0, joint_fitted_objective = 0;
};

struct ReplayResult {
  std::string scenario_file, scenario_name, gpu;
  const replay::MeasuredRun* measured = nullptr;
  std::vector<replay::SimulatedRequest> simulated;  // by id = measured index + 1
  replay::Samples measured_samples, simulated_samples;
  replay::Comparison comparison;
  perf::Fidelity fidelity;  // of the scenario's calibration (perf::resolve)
  double simulated_s = 0, wall_s = 0;
  const ReplayFit* fit = nullptr;  // with --fit
};

nlohmann::ordered_json comparison_json(const ReplayResult& r);
// One row per request: the measured and simulated figures side by side.
Status write_per_request_csv(const ReplayResult& r, const std::string& path);
// The summary for the terminal: what was replayed, the calibration, the table(s).
std::string replay_summary(const ReplayResult& r, const std::string& out_dir);
// DIR/comparison.html (replay_html.cpp): self-contained, inline SVG, no script.
std::string comparison_html(const ReplayResult& r);

// A fit to several runs together: DIR/fit.json and its summary for the terminal. `runs` are
// the runs' results (each with its `fit`), `dirs` their folders relative to DIR.
nlohmann::ordered_json joint_fit_json(const std::vector<const ReplayResult*>& runs,
                                      const std::vector<std::string>& dirs, double wall_s);
std::string joint_fit_summary(const std::vector<const ReplayResult*>& runs,
                              const std::string& out_dir);

}  // namespace prima::cli
