// The planner (see planner.h): check, screen, shard, search, answer the target, write.
#include "engine/capacity/planner.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "engine/capacity/plan_json.h"
#include "engine/capacity/plan_target.h"
#include "engine/capacity/prune.h"
#include "engine/perf/engine_profile.h"
#include "engine/scenario/scenario.h"

namespace fs = std::filesystem;

namespace prima::capacity {
namespace {

using config::Json;

// The base scenario must parse with the probe overrides, and take an arrival rate. Its
// calibration is every configuration's (the search does not change it).
Result<perf::Calibration> check_base_scenario(const PlanSpec& spec) {
  const Json& arr = spec.scenario.contains("workload") && spec.scenario["workload"].is_object()
                        ? spec.scenario["workload"].value("arrival", Json::object())
                        : Json::object();
  if (arr.is_object() && arr.value("type", std::string("poisson")) == "closed_loop")
    return invalid_argument(spec.scenario_file +
                            ": /workload/arrival: a closed_loop workload has no request rate to "
                            "search; use poisson, gamma, constant or trace arrivals");
  Json j = spec.scenario;
  for (const auto& s : probe_sets(spec, spec.rate.min_rps)) {
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

// The fidelity of every GPU type the space uses, and a price for each.
Status note_gpus(const PlanSpec& spec, const perf::Calibration& calibration, const SearchList& list,
                 Screened* s) {
  // By GPU with the base scenario's engine; a configuration of another engine (the engines
  // dimension) under "<engine> on <gpu>".
  auto note = [&](const PlanConfig& c) {
    perf::Calibration cal = calibration;
    std::string prefix;
    if (c.value("engines").is_string()) {
      const std::string name = c.value("engines").get<std::string>();
      if (const perf::EngineProfile* e = perf::builtin_engine(name)) {
        cal.engine = std::shared_ptr<const perf::EngineProfile>(e, [](auto*) {});
        if (!calibration.engine || calibration.engine->name != name) prefix = name + " on ";
      }
    }
    for (const auto& [gpu, n] : c.gpu_counts())
      if (!s->fidelity.count(prefix + gpu))
        s->fidelity.emplace(prefix + gpu, perf::trust_json(perf::resolve(cal, gpu), gpu, nullptr));
  };
  for (const auto& c : list.configs) note(c);
  for (const auto& k : list.skipped) note(k.config);
  std::vector<std::string> gpus;
  for (const auto& c : list.configs)
    for (const auto& [gpu, n] : c.gpu_counts()) gpus.push_back(gpu);
  for (const auto& k : list.skipped)
    for (const auto& [gpu, n] : k.config.gpu_counts()) gpus.push_back(gpu);
  std::sort(gpus.begin(), gpus.end());
  gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
  return check_economics(spec, gpus);
}

Status contradictory(const PlanSpec& spec, const std::vector<PrunedConfig>& pruned) {
  std::string msg = spec.file +
                    ": /search: contradictory search space: no combination can run. For "
                    "example:";
  for (std::size_t i = 0; i < pruned.size() && i < 3; ++i)
    msg += "\n  " + pruned[i].config.key() + ": " + pruned[i].reason;
  return invalid_argument(msg);
}

// Shard i of n: every n-th configuration from the i-th.
void keep_shard(const PlannerOptions& o, std::vector<SearchedConfig>* to_search) {
  if (o.shard_count <= 1) return;
  std::vector<SearchedConfig> mine;
  for (std::size_t i = 0; i < to_search->size(); ++i)
    if (static_cast<int>(i % o.shard_count) == o.shard_index)
      mine.push_back(std::move((*to_search)[i]));
  *to_search = std::move(mine);
}

// With a target rate: the answer (plan_target.h). When the space did not hold the winner with
// one replica fewer, that configuration is simulated at the target; while it meets the SLO
// too (the space's replica counts were coarse), it joins the searched configurations (so the
// answer is the smallest) and the next one fewer is tried, until one fails, is pruned or no
// replica is left to remove.
Result<Json> check_minimality(const PlanSpec& spec, const PlannerOptions& o, const PlanCache& cache,
                              ProbeRunner* runner, std::vector<SearchedConfig>* searched,
                              std::ostream* results, std::int64_t* simulations) {
  SearchControl quiet;  // no progress display; the same cap on new simulations
  quiet.max_simulations = o.search.max_simulations;
  for (;;) {
    const SearchedConfig* winner = fewest_gpus(spec, *searched);
    std::optional<PlanConfig> fewer;
    if (winner) fewer = one_replica_fewer(winner->config, *searched);
    if (!fewer) return target_json(spec, *searched, nullptr, "");
    Screening sc = screen_config(spec, *fewer);
    if (sc.pruned) return target_json(spec, *searched, nullptr, sc.kind + ": " + sc.reason);
    std::vector<SearchedConfig> check(1);
    check[0].config = *fewer;
    check[0].bound_rps = sc.bound_rps;
    check[0].search = RateSearch(spec.rate.min_rps, spec.rate.max_rps, spec.rate.tolerance);
    const PlanSearchResult r = search_plan(spec, quiet, cache, runner, &check, results);
    if (!r.status.ok()) return r.status;
    *simulations += r.simulations;
    if (check[0].probes.empty()) return failed_precondition(fewer->key() + ": was not simulated");
    if (!check[0].search.any_met()) return target_json(spec, *searched, &check[0], "");
    searched->push_back(std::move(check[0]));  // smaller, and it meets: the new winner
  }
}

}  // namespace

Result<Screened> screen_plan(const PlanSpec& spec) {
  auto calibration = check_base_scenario(spec);
  if (!calibration.ok()) return calibration.status();
  auto list = enumerate_configs(spec);
  if (!list.ok()) return list.status();
  Screened s;
  s.total_configs = list->configs.size() + list->skipped.size();
  PRIMA_RETURN_IF_ERROR(note_gpus(spec, *calibration, *list, &s));
  for (const auto& k : list->skipped) s.pruned.push_back({k.config, "invalid", k.reason});
  for (const auto& c : list->configs) {
    Screening sc = screen_config(spec, c);
    if (sc.pruned) {
      s.pruned.push_back({c, sc.kind, sc.reason});
      continue;
    }
    SearchedConfig cfg;
    cfg.config = c;
    cfg.bound_rps = sc.bound_rps;
    const double upper =
        spec.rate.max_rps > 0 ? std::min(spec.rate.max_rps, sc.bound_rps) : sc.bound_rps;
    cfg.search = RateSearch(spec.rate.min_rps, upper, spec.rate.tolerance);
    s.to_search.push_back(std::move(cfg));
  }
  const bool all_invalid =
      s.to_search.empty() && std::all_of(s.pruned.begin(), s.pruned.end(),
                                         [](const auto& p) { return p.kind == "invalid"; });
  if (all_invalid) return contradictory(spec, s.pruned);
  return s;
}

std::string results_path(const PlannerOptions& o) {
  return o.shard_count > 1 ? fmt::format("{}/results.shard-{}-of-{}.jsonl", o.out_dir,
                                         o.shard_index, o.shard_count)
                           : o.out_dir + "/results.jsonl";
}

Result<PlanOutcome> run_planner(const PlanSpec& spec, const PlannerOptions& o,
                                ProbeRunner* runner) {
  const double t0 = o.clock_s ? o.clock_s() : 0;
  PlanOutcome out;
  PRIMA_ASSIGN_OR_RETURN(out.screened, screen_plan(spec));
  keep_shard(o, &out.screened.to_search);
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec)
    return invalid_argument(o.out_dir + ": cannot create the output directory: " + ec.message());
  const PlanCache cache = load_plan_cache(o.out_dir, o.note);
  out.results_path = results_path(o);
  std::ofstream results(out.results_path, std::ios::app);
  if (!results) return internal_error(out.results_path + ": cannot open for appending");

  out.search = search_plan(spec, o.search, cache, runner, &out.screened.to_search, &results);
  if (!out.search.status.ok()) return internal_error(out.search.status.message());
  if (out.search.stopped || o.shard_count > 1) return out;
  Json target;
  if (spec.target_rps > 0) {
    auto t = check_minimality(spec, o, cache, runner, &out.screened.to_search, &results,
                              &out.search.simulations);
    if (!t.ok()) return internal_error(t.status().message());
    target = *t;
  }
  const double wall_s = o.clock_s ? o.clock_s() - t0 : 0;
  out.plan =
      build_plan_json(spec, out.screened.to_search, out.screened.pruned, out.screened.fidelity,
                      out.search.simulations, wall_s, out.screened.total_configs);
  if (!target.is_null()) out.plan["target"] = target;
  std::ofstream f(o.out_dir + "/plan.json");
  f << out.plan.dump(2) << "\n";
  if (!f) return internal_error(o.out_dir + "/plan.json: cannot write");
  return out;
}

}  // namespace prima::capacity
