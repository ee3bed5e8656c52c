// comparison.json, per_request.csv and the terminal summary of `prima replay`
// (replay_output.h).
#include "cli/replay_output.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>

namespace prima::cli {
namespace {

using OJson = nlohmann::ordered_json;

OJson params_json(const replay::FitParams& p, const std::vector<double>& x) {
  OJson j = OJson::object();
  for (std::size_t i = 0; i < p.size(); ++i) j[p[i]->name] = x[i];
  return j;
}

std::size_t completed(const replay::MeasuredRun& m) {
  std::size_t n = 0;
  for (const auto& r : m.requests) n += r.ok;
  return n;
}

std::size_t completed(const std::vector<replay::SimulatedRequest>& s) {
  std::size_t n = 0;
  for (const auto& r : s) n += r.ok;
  return n;
}

std::string param_names(const replay::FitParams& p) {
  std::string s;
  for (const auto* f : p) s += std::string(s.empty() ? "" : ", ") + f->name;
  return s;
}

// The search: params, initial and fitted values, the objective, iterations, evaluations.
void put_search(const ReplayFit& f, double initial_objective, double fitted_objective, OJson* j) {
  (*j)["params"] = OJson::array();
  for (const auto* p : f.params) (*j)["params"].push_back(p->name);
  (*j)["initial"] = params_json(f.params, f.initial);
  (*j)["fitted"] = params_json(f.params, f.fitted);
  (*j)["objective"] = {{"initial", initial_objective}, {"fitted", fitted_objective}};
  (*j)["iterations"] = f.iterations;
  (*j)["max_iterations"] = f.max_iterations;
  (*j)["evaluations"] = f.evaluations;
}

// One line per fitted parameter: its name, initial -> fitted value, what it is.
std::string param_lines(const ReplayFit& f) {
  std::string s;
  for (std::size_t i = 0; i < f.params.size(); ++i)
    s += fmt::format("  {:<22} {:>12.6g} -> {:<12.6g} {}\n", f.params[i]->name, f.initial[i],
                     f.fitted[i], f.params[i]->what);
  return s;
}

}  // namespace

OJson comparison_json(const ReplayResult& r) {
  const replay::MeasuredRun& m = *r.measured;
  OJson j;
  j["measured_file"] = m.file;
  j["measured_format"] = replay::measured_format_name(m.format);
  j["scenario"] = r.scenario_file;
  j["scenario_name"] = r.scenario_name;
  j["gpu"] = r.gpu;
  j["requests"] = m.requests.size();
  j["completed"] = {{"measured", completed(m)}, {"simulated", completed(r.simulated)}};
  j["metrics"] = replay::comparison_to_json(r.comparison);
  j["objective"] = std::isfinite(replay::fit_objective(r.comparison))
                       ? OJson(replay::fit_objective(r.comparison))
                       : OJson(nullptr);
  j["fidelity"] = OJson(perf::fidelity_to_json(r.fidelity));
  if (r.fit) {
    const ReplayFit& f = *r.fit;
    OJson fj;
    put_search(f, f.initial_objective, f.fitted_objective, &fj);
    fj["converged"] = f.converged;
    fj["completed_simulated"] = completed(f.simulated);
    fj["metrics"] = replay::comparison_to_json(f.comparison);
    fj["fidelity"] = OJson(perf::fidelity_to_json(f.profile.fidelity));
    fj["profile"] = f.joint_files.empty() ? "profile.json" : "../profile.json";
    fj["wall_s"] = f.wall_s;
    if (!f.joint_files.empty())
      fj["joint"] = {
          {"runs", f.joint_files},
          {"objective",
           {{"initial", f.joint_initial_objective}, {"fitted", f.joint_fitted_objective}}},
          {"fit", "../fit.json"}};
    j["fit"] = std::move(fj);
  }
  j["run"] = {{"simulated_s", r.simulated_s}, {"wall_s", r.wall_s}};
  return j;
}

Status write_per_request_csv(const ReplayResult& r, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return invalid_argument(path + ": cannot write");
  const bool fit = r.fit != nullptr;
  std::string head =
      "id,line,measured_id,arrival_s,simulated_arrival_s,prompt_tokens,output_tokens,"
      "measured_ok,simulated_ok,measured_ttft_s,simulated_ttft_s,measured_tpot_s,"
      "simulated_tpot_s,measured_e2e_s,simulated_e2e_s,measured_queue_s,simulated_queue_s";
  if (fit) head += ",fitted_ttft_s,fitted_tpot_s,fitted_e2e_s,fitted_queue_s";
  std::fputs((head + "\n").c_str(), f);
  // Times with every digit; a figure that was not measured (or did not complete) is empty.
  auto t = [](double v) { return v >= 0 ? fmt::format("{}", v) : std::string(); };
  const auto& m = r.measured->requests;
  for (std::size_t i = 0; i < m.size() && i < r.simulated.size(); ++i) {
    const auto& a = m[i];
    const auto& b = r.simulated[i];
    std::string id = a.id;
    for (char& c : id)
      if (c == ',' || c == '"' || c == '\n') c = ' ';
    std::string line = fmt::format(
        "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", b.id, a.line, id, t(a.arrival_s),
        t(b.arrival_s), a.prompt_tokens, a.output_tokens, a.ok ? 1 : 0, b.ok ? 1 : 0, t(a.ttft_s),
        t(b.ttft_s), t(a.tpot_s), t(b.tpot_s), t(a.e2e_s), t(b.e2e_s), t(a.queue_s), t(b.queue_s));
    if (fit) {
      const auto& c = r.fit->simulated[i];
      line += fmt::format(",{},{},{},{}", t(c.ttft_s), t(c.tpot_s), t(c.e2e_s), t(c.queue_s));
    }
    std::fputs((line + "\n").c_str(), f);
  }
  return std::fclose(f) == 0 ? ok_status() : invalid_argument(path + ": cannot write");
}

std::string replay_summary(const ReplayResult& r, const std::string& out_dir) {
  const replay::MeasuredRun& m = *r.measured;
  std::string s = fmt::format("replay of {} ({}, {} requests, {} completed) on scenario {} ({})\n",
                              m.file, replay::measured_format_name(m.format), m.requests.size(),
                              completed(m), r.scenario_name, r.gpu);
  s += fmt::format("  simulated  {} completed, {:.1f} simulated s\n", completed(r.simulated),
                   r.simulated_s);
  s += "  calibration " + r.fidelity.summary() + "\n";
  s += "  error = (simulated - measured) / measured\n";
  s += replay::comparison_table(r.comparison);
  const double obj = replay::fit_objective(r.comparison);
  if (std::isfinite(obj))
    s += fmt::format(
        "  objective  {:.6g} (mean squared log ratio of TTFT, TPOT, E2E mean and p90)\n", obj);
  if (r.fit && !r.fit->joint_files.empty()) {  // the fit itself: joint_fit_summary
    const ReplayFit& f = *r.fit;
    s += fmt::format("  objective  {:.6g} -> {:.6g} with the values fitted to {} runs together:\n",
                     f.initial_objective, f.fitted_objective, f.joint_files.size());
    s += replay::comparison_table(f.comparison);
  } else if (r.fit) {
    const ReplayFit& f = *r.fit;
    s +=
        fmt::format("fit of {}: {} iterations{}, {} simulations, {:.1f} s\n", param_names(f.params),
                    f.iterations, f.converged ? " (converged)" : " (the cap; not converged)",
                    f.evaluations, f.wall_s);
    s += param_lines(f);
    s += fmt::format("  objective  {:.6g} -> {:.6g}\n", f.initial_objective, f.fitted_objective);
    s += "  with the fitted values:\n";
    s += replay::comparison_table(f.comparison);
    s += "  fitted     " + f.profile.fidelity.summary() + "\n";
  }
  const bool own_profile = r.fit && r.fit->joint_files.empty();
  s += fmt::format(
      "  wrote      {}/{{comparison.json,comparison.html,per_request.csv,trace.jsonl{}}}\n",
      out_dir, own_profile ? ",profile.json" : "");
  return s;
}

OJson joint_fit_json(const std::vector<const ReplayResult*>& runs,
                     const std::vector<std::string>& dirs, double wall_s) {
  const ReplayResult& first = *runs.front();
  const ReplayFit& f = *first.fit;
  OJson j;
  j["runs"] = OJson::array();
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const ReplayResult& r = *runs[i];
    j["runs"].push_back(
        {{"measured_file", r.measured->file},
         {"dir", dirs[i]},
         {"requests", r.measured->requests.size()},
         {"objective",
          {{"initial", r.fit->initial_objective}, {"fitted", r.fit->fitted_objective}}}});
  }
  j["scenario"] = first.scenario_file;
  j["scenario_name"] = first.scenario_name;
  j["gpu"] = first.gpu;
  put_search(f, f.joint_initial_objective, f.joint_fitted_objective, &j);
  j["simulations"] = f.evaluations * static_cast<int>(runs.size());
  j["converged"] = f.converged;
  j["fidelity"] = OJson(perf::fidelity_to_json(f.profile.fidelity));
  j["profile"] = "profile.json";
  j["fit_wall_s"] = f.wall_s;
  j["wall_s"] = wall_s;
  return j;
}

std::string joint_fit_summary(const std::vector<const ReplayResult*>& runs,
                              const std::string& out_dir) {
  const ReplayFit& f = *runs.front()->fit;
  std::string s =
      fmt::format("fit of {} to {} runs together: {} iterations{}, {} simulations, {:.1f} s\n",
                  param_names(f.params), runs.size(), f.iterations,
                  f.converged ? " (converged)" : " (the cap; not converged)",
                  f.evaluations * static_cast<int>(runs.size()), f.wall_s);
  s += param_lines(f);
  for (const ReplayResult* r : runs)
    s += fmt::format("  objective  {:.6g} -> {:.6g}  {}\n", r->fit->initial_objective,
                     r->fit->fitted_objective, r->measured->file);
  s += fmt::format("  objective  {:.6g} -> {:.6g}  joint (the mean of the runs')\n",
                   f.joint_initial_objective, f.joint_fitted_objective);
  s += "  fitted     " + f.profile.fidelity.summary() + "\n";
  s += fmt::format("  wrote      {}/{{fit.json,profile.json}}\n", out_dir);
  return s;
}

}  // namespace prima::cli
