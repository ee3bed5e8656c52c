// `prima plan` (see plan_runner.h): options to planner, planner to outputs.
#include "cli/plan_runner.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <fstream>

#include "backends/sim/probe_pool.h"
#include "cli/commands.h"
#include "cli/html_report.h"
#include "cli/plan_helm_values.h"
#include "engine/capacity/planner.h"

namespace prima::cli {
namespace {

using config::Json;
using Clock = std::chrono::steady_clock;

int fail(int code, const std::string& msg) {
  std::fprintf(stderr, "prima plan: %s\n", msg.c_str());
  return code;
}

std::string hms(double s) {
  if (!(s >= 0) || s > 1e7) return "--";
  const long t = static_cast<long>(s + 0.5);
  return t >= 3600 ? fmt::format("{}h{:02}m", t / 3600, t / 60 % 60)
                   : fmt::format("{}m{:02}s", t / 60, t % 60);
}

// The progress bar on stderr: redrawn at most 5 times a second, and at the end.
class ProgressBar {
 public:
  void operator()(const capacity::SearchProgress& p) {
    const double el = std::chrono::duration<double>(Clock::now() - start_).count();
    if (!p.final && last_ >= 0 && el - last_ < 0.2) return;
    last_ = el;
    const std::size_t new_done = p.done - p.done_before;
    const double eta = new_done > 0 ? el / new_done * (p.total - p.done) : -1;
    const int width = 24;
    const int fill = p.total ? static_cast<int>(width * p.done / p.total) : width;
    std::fprintf(stderr,
                 "\r[plan] [%s%s] %zu/%zu configs  %lld sims (%lld reused, %d running)  %s  "
                 "ETA %s ",
                 std::string(fill, '#').c_str(), std::string(width - fill, '.').c_str(), p.done,
                 p.total, static_cast<long long>(p.simulations), static_cast<long long>(p.reused),
                 p.running, hms(el).c_str(), p.total == p.done ? "0m00s" : hms(eta).c_str());
    if (p.final) std::fprintf(stderr, "\n");
    std::fflush(stderr);
  }

 private:
  Clock::time_point start_ = Clock::now();
  double last_ = -1;
};

int write_helm_values(const capacity::PlanSpec& spec, const PlanOptions& o, const Json& plan) {
  std::string note;
  auto yaml = helm_values_yaml(spec, plan, &note);
  if (!note.empty()) std::fprintf(stderr, "prima plan: note: %s\n", note.c_str());
  if (!yaml.ok())
    return fail(kExitFailure,
                "--emit-helm-values " + o.helm_values_path + ": " + yaml.status().message());
  const std::string sim_path = sim_values_path(o.helm_values_path);
  for (const auto& [path, text] :
       {std::pair{o.helm_values_path, yaml->values}, std::pair{sim_path, yaml->sim_values}}) {
    std::ofstream f(path);
    f << text;
    if (!f) return fail(kExitFailure, "--emit-helm-values " + path + ": cannot write");
  }
  std::printf(
      "  wrote      %s (helm install prima deploy/helm/prima -f %s) and %s (the same "
      "on the simulator)\n",
      o.helm_values_path.c_str(), o.helm_values_path.c_str(), sim_path.c_str());
  return kExitOk;
}

}  // namespace

int run_plan(const PlanOptions& o) {
  const auto t0 = Clock::now();
  auto spec = capacity::load_plan(o.plan_path);
  if (!spec.ok()) return fail(kExitBadInput, spec.status().message());
  if (o.target_given) capacity::set_target_rate(&*spec, o.target_rps);

  capacity::PlannerOptions po;
  po.out_dir = o.out_dir.empty() ? "out/plan-" + spec->name : o.out_dir;
  po.shard_index = o.shard_index;
  po.shard_count = o.shard_count;
  po.search.max_simulations = o.max_simulations;
  ProgressBar bar;
  if (!o.quiet) po.search.progress = [&bar](const capacity::SearchProgress& p) { bar(p); };
  if (!o.quiet)
    po.note = [](const std::string& s) { std::fprintf(stderr, "prima plan: %s\n", s.c_str()); };
  po.clock_s = [t0] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  sim::ProbePool pool(o.jobs);
  auto run = capacity::run_planner(*spec, po, &pool);
  if (!run.ok())
    return fail(run.status().code() == StatusCode::kInvalidArgument ? kExitBadInput : kExitFailure,
                run.status().message());
  if (run->search.stopped)
    return fail(kExitFailure,
                fmt::format("stopped after {} simulations (--max-simulations); rerun the same "
                            "command to resume from {}",
                            run->search.started, run->results_path));
  if (o.shard_count > 1) {
    std::printf(
        "shard %d/%d: searched %zu configurations (%lld simulations) into %s\n"
        "merge: prima plan %s --out %s (reuses every shard's results)\n",
        o.shard_index, o.shard_count, run->screened.to_search.size(),
        static_cast<long long>(run->search.simulations), run->results_path.c_str(),
        o.plan_path.c_str(), po.out_dir.c_str());
    return kExitOk;
  }
  print_plan_summary(run->plan, po.out_dir);
  Status html = render_html_report("plan", po.out_dir);
  if (html.ok())
    std::printf("  wrote      %s/report.html\n", po.out_dir.c_str());
  else
    std::fprintf(stderr, "prima plan: warning: %s\n", html.message().c_str());
  if (!o.helm_values_path.empty()) return write_helm_values(*spec, o, run->plan);
  return kExitOk;
}

}  // namespace prima::cli
