// The `prima plan` driver (see plan_runner.h): load and check the plan, screen its
// configurations, search (plan_search.h), write the outputs.
#include "cli/plan_runner.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "cli/commands.h"
#include "cli/html_report.h"
#include "cli/plan_helm_values.h"
#include "cli/plan_search.h"
#include "cli/plan_target.h"
#include "engine/capacity/prune.h"
#include "engine/scenario/scenario.h"

namespace fs = std::filesystem;

namespace prima::cli {
namespace {

using config::Json;
using Clock = std::chrono::steady_clock;

int fail(int code, const std::string& msg) {
  std::fprintf(stderr, "prima plan: %s\n", msg.c_str());
  return code;
}

// The base scenario must parse with the probe overrides, and take an arrival rate. Its
// calibration is every configuration's (the search does not change it).
Result<perf::Calibration> check_base_scenario(const capacity::PlanSpec& spec) {
  const Json& arr = spec.scenario.contains("workload") && spec.scenario["workload"].is_object()
                        ? spec.scenario["workload"].value("arrival", Json::object())
                        : Json::object();
  if (arr.is_object() && arr.value("type", std::string("poisson")) == "closed_loop")
    return invalid_argument(spec.scenario_file +
                            ": /workload/arrival: a closed_loop workload has no request rate to "
                            "search; use poisson, gamma, constant or trace arrivals");
  Json j = spec.scenario;
  for (const auto& s : capacity::probe_sets(spec, spec.rate.min_rps)) {
    Status st = scenario::apply_set(&j, s);
    if (!st.ok()) return invalid_argument(spec.scenario_file + ": " + st.message());
  }
  auto sc = scenario::parse_scenario(j, spec.scenario_file, spec.scenario_dir);
  if (!sc.ok())
    return invalid_argument(sc.status().message() +
                            " (the plan's base scenario, with the probe's rate and duration set)");
  if (sc->workload.arrival.type == workload::ArrivalType::kTrace && spec.rate.max_rps <= 0)
    return invalid_argument(spec.file +
                            ": /rate/max_rps: needed with a trace workload (there is no "
                            "roofline bound without a length distribution)");
  return sc->calibration;
}

// The configurations of the search space: those to search (of this shard) and those pruned,
// with why; and how far the cost model can be trusted on each GPU type.
struct Screened {
  std::vector<SearchedConfig> to_search;
  std::vector<PrunedConfig> pruned;
  std::map<std::string, perf::Fidelity> fidelity;
  std::size_t total_configs = 0;
};

Result<Screened> screen(const capacity::PlanSpec& spec, const perf::Calibration& calibration) {
  auto list = capacity::enumerate_configs(spec);
  if (!list.ok()) return list.status();
  Screened s;
  s.total_configs = list->configs.size() + list->skipped.size();
  auto note_gpus = [&](const capacity::PlanConfig& c) {
    for (const auto& [gpu, n] : c.gpu_counts())
      s.fidelity.emplace(gpu, perf::resolve(calibration, gpu).fidelity);
  };
  for (const auto& c : list->configs) note_gpus(c);
  for (const auto& k : list->skipped) note_gpus(k.config);
  std::vector<std::string> gpus;
  for (const auto& [gpu, f] : s.fidelity) gpus.push_back(gpu);
  PRIMA_RETURN_IF_ERROR(capacity::check_economics(spec, gpus));
  for (const auto& k : list->skipped) s.pruned.push_back({k.config, "invalid", k.reason});
  for (const auto& c : list->configs) {
    capacity::Screening sc = capacity::screen_config(spec, c);
    if (sc.pruned) {
      s.pruned.push_back({c, sc.kind, sc.reason});
      continue;
    }
    SearchedConfig cfg;
    cfg.config = c;
    cfg.bound_rps = sc.bound_rps;
    const double upper =
        spec.rate.max_rps > 0 ? std::min(spec.rate.max_rps, sc.bound_rps) : sc.bound_rps;
    cfg.search = capacity::RateSearch(spec.rate.min_rps, upper, spec.rate.tolerance);
    s.to_search.push_back(std::move(cfg));
  }
  const bool all_invalid =
      s.to_search.empty() && std::all_of(s.pruned.begin(), s.pruned.end(),
                                         [](const auto& p) { return p.kind == "invalid"; });
  if (all_invalid) {
    std::string msg = spec.file +
                      ": /search: contradictory search space: no combination can run. For "
                      "example:";
    for (std::size_t i = 0; i < s.pruned.size() && i < 3; ++i)
      msg += "\n  " + s.pruned[i].config.key() + ": " + s.pruned[i].reason;
    return invalid_argument(msg);
  }
  return s;
}

// Shard i of n: every n-th configuration from the i-th.
void keep_shard(const PlanOptions& o, std::vector<SearchedConfig>* to_search) {
  if (o.shard_count <= 1) return;
  std::vector<SearchedConfig> mine;
  for (std::size_t i = 0; i < to_search->size(); ++i)
    if (static_cast<int>(i % o.shard_count) == o.shard_index)
      mine.push_back(std::move((*to_search)[i]));
  *to_search = std::move(mine);
}

std::string results_path(const PlanOptions& o, const std::string& dir) {
  return o.shard_count > 1
             ? fmt::format("{}/results.shard-{}-of-{}.jsonl", dir, o.shard_index, o.shard_count)
             : dir + "/results.jsonl";
}

// After the search: a shard says how to merge; the whole plan writes plan.json, prints the
// ranking and renders the report.
int finish(const capacity::PlanSpec& spec, const PlanOptions& o, const std::string& dir,
           const Screened& s, const PlanSearchResult& r, double wall_s, const Json& target) {
  if (o.shard_count > 1) {
    std::printf(
        "shard %d/%d: searched %zu configurations (%lld simulations) into %s\n"
        "merge: prima plan %s --out %s (reuses every shard's results)\n",
        o.shard_index, o.shard_count, s.to_search.size(), static_cast<long long>(r.simulations),
        results_path(o, dir).c_str(), o.plan_path.c_str(), dir.c_str());
    return kExitOk;
  }
  Json out = build_plan_json(spec, s.to_search, s.pruned, s.fidelity, r.simulations, wall_s,
                             s.total_configs);
  if (!target.is_null()) out["target"] = target;
  {
    std::ofstream f(dir + "/plan.json");
    f << out.dump(2) << "\n";
    if (!f) return fail(kExitFailure, dir + "/plan.json: cannot write");
  }
  print_plan_summary(out, dir);
  Status html = render_html_report("plan", dir);
  if (html.ok())
    std::printf("  wrote      %s/report.html\n", dir.c_str());
  else
    std::fprintf(stderr, "prima plan: warning: %s\n", html.message().c_str());
  if (!o.helm_values_path.empty()) {
    std::string note;
    auto yaml = helm_values_yaml(spec, out, &note);
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
  }
  return kExitOk;
}

// With a target rate: the answer (plan_target.h). When the space did not hold the winner with
// one replica fewer, that configuration is simulated at the target; while it meets the SLO
// too (the space's replica counts were coarse), it joins the searched configurations (so the
// answer is the smallest) and the next one fewer is tried, until one fails, is pruned or no
// replica is left to remove.
Result<Json> check_minimality(const capacity::PlanSpec& spec, const PlanOptions& o,
                              const PlanCache& cache, std::vector<SearchedConfig>* searched,
                              std::ostream* results, std::int64_t* simulations) {
  PlanOptions quiet = o;
  quiet.quiet = true;
  for (;;) {
    const SearchedConfig* winner = fewest_gpus(spec, *searched);
    std::optional<capacity::PlanConfig> fewer;
    if (winner) fewer = one_replica_fewer(winner->config, *searched);
    if (!fewer) return target_json(spec, *searched, nullptr, "");
    capacity::Screening sc = capacity::screen_config(spec, *fewer);
    if (sc.pruned) return target_json(spec, *searched, nullptr, sc.kind + ": " + sc.reason);
    std::vector<SearchedConfig> check(1);
    check[0].config = *fewer;
    check[0].bound_rps = sc.bound_rps;
    check[0].search =
        capacity::RateSearch(spec.rate.min_rps, spec.rate.max_rps, spec.rate.tolerance);
    const PlanSearchResult r = search_plan(spec, quiet, cache, &check, results);
    if (!r.status.ok()) return r.status;
    *simulations += r.simulations;
    if (check[0].probes.empty()) return failed_precondition(fewer->key() + ": was not simulated");
    if (!check[0].search.any_met()) return target_json(spec, *searched, &check[0], "");
    searched->push_back(std::move(check[0]));  // smaller, and it meets: the new winner
  }
}

}  // namespace

int run_plan(const PlanOptions& o) {
  const auto t0 = Clock::now();
  auto spec = capacity::load_plan(o.plan_path);
  if (!spec.ok()) return fail(kExitBadInput, spec.status().message());
  if (o.target_given) capacity::set_target_rate(&*spec, o.target_rps);
  auto calibration = check_base_scenario(*spec);
  if (!calibration.ok()) return fail(kExitBadInput, calibration.status().message());
  auto screened = screen(*spec, *calibration);
  if (!screened.ok()) return fail(kExitBadInput, screened.status().message());
  keep_shard(o, &screened->to_search);

  const std::string dir = o.out_dir.empty() ? "out/plan-" + spec->name : o.out_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(kExitBadInput, "--out " + dir + ": cannot create directory: " + ec.message());
  const PlanCache cache = load_plan_cache(dir, o.quiet);
  std::ofstream results(results_path(o, dir), std::ios::app);
  if (!results) return fail(kExitFailure, results_path(o, dir) + ": cannot open for appending");

  PlanSearchResult r = search_plan(*spec, o, cache, &screened->to_search, &results);
  if (!r.status.ok()) return fail(kExitFailure, r.status.message());
  if (r.stopped)
    return fail(kExitFailure,
                fmt::format("stopped after {} simulations (--max-simulations); rerun the same "
                            "command to resume from {}",
                            r.started, results_path(o, dir)));
  Json target;
  if (spec->target_rps > 0 && o.shard_count <= 1) {
    auto t = check_minimality(*spec, o, cache, &screened->to_search, &results, &r.simulations);
    if (!t.ok()) return fail(kExitFailure, t.status().message());
    target = *t;
  }
  const double wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return finish(*spec, o, dir, *screened, r, wall_s, target);
}

}  // namespace prima::cli
