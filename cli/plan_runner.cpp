#include "cli/plan_runner.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "backends/sim/probe_pool.h"
#include "cli/commands.h"
#include "cli/html_report.h"
#include "engine/config/json_parse.h"
#include "engine/config/scenario.h"
#include "engine/plan/prune.h"

namespace fs = std::filesystem;

namespace prima::cli {
namespace {

using config::Json;
using Clock = std::chrono::steady_clock;

// Cached simulations: config key -> rate -> metrics, from every results*.jsonl in DIR.
using Cache = std::map<std::string, std::map<double, plan::ProbeMetrics>>;

Cache load_cache(const std::string& dir, bool quiet) {
  Cache cache;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("results", 0) != 0 || e.path().extension() != ".jsonl") continue;
    std::ifstream in(e.path());
    std::string line;
    int lineno = 0;
    while (std::getline(in, line)) {
      ++lineno;
      if (line.empty()) continue;
      try {
        auto parsed = config::parse_json(line, nullptr);
        if (!parsed) throw std::runtime_error("malformed JSON");
        const Json& j = *parsed;
        cache[j.at("key").get<std::string>()][j.at("rate_rps").get<double>()] =
            plan::ProbeMetrics::from_json(j.at("metrics"));
      } catch (const std::exception&) {
        // A line cut short by a kill: its simulation is simply run again.
        if (!quiet)
          std::fprintf(stderr, "prima plan: %s:%d: skipping an unreadable line\n", e.path().c_str(),
                       lineno);
      }
    }
  }
  return cache;
}

std::string hms(double s) {
  if (!(s >= 0) || s > 1e7) return "--";
  const long t = static_cast<long>(s + 0.5);
  return t >= 3600 ? fmt::format("{}h{:02}m", t / 3600, t / 60 % 60)
                   : fmt::format("{}m{:02}s", t / 60, t % 60);
}

struct Progress {
  bool quiet = false;
  std::size_t total = 0, done = 0, done_at_start = 0;
  std::int64_t sims = 0, reused = 0;
  Clock::time_point start = Clock::now();
  mutable double last_shown = -1;
  // Redraws at most 5 times a second (always when `force`).
  void show(int running, bool force = false) const {
    if (quiet) return;
    const double el = std::chrono::duration<double>(Clock::now() - start).count();
    if (!force && last_shown >= 0 && el - last_shown < 0.2) return;
    last_shown = el;
    const std::size_t new_done = done - done_at_start;
    const double eta = new_done > 0 ? el / new_done * (total - done) : -1;
    const int width = 24;
    const int fill = total ? static_cast<int>(width * done / total) : width;
    std::fprintf(stderr,
                 "\r[plan] [%s%s] %zu/%zu configs  %lld sims (%lld reused, %d running)  %s  "
                 "ETA %s ",
                 std::string(fill, '#').c_str(), std::string(width - fill, '.').c_str(), done,
                 total, static_cast<long long>(sims), static_cast<long long>(reused), running,
                 hms(el).c_str(), total == done ? "0m00s" : hms(eta).c_str());
    std::fflush(stderr);
  }
};

}  // namespace

int run_plan(const PlanRunOptions& o) {
  const auto t0 = Clock::now();
  auto fail = [](int code, const std::string& msg) {
    std::fprintf(stderr, "prima plan: %s\n", msg.c_str());
    return code;
  };
  auto spec_r = plan::load_plan(o.plan_path);
  if (!spec_r.ok()) return fail(kExitBadInput, spec_r.status().message());
  const plan::PlanSpec& spec = *spec_r;

  // The base scenario must parse with the probe overrides, and take an arrival rate. Its
  // calibration is every configuration's (the search does not change it).
  perf::Calibration calibration;
  {
    const Json& arr = spec.scenario.contains("workload") && spec.scenario["workload"].is_object()
                          ? spec.scenario["workload"].value("arrival", Json::object())
                          : Json::object();
    if (arr.is_object() && arr.value("type", std::string("poisson")) == "closed_loop")
      return fail(kExitBadInput,
                  spec.scenario_file +
                      ": /workload/arrival: a closed_loop workload has no request rate to "
                      "search; use poisson, gamma, constant or trace arrivals");
    Json j = spec.scenario;
    for (const auto& s : plan::probe_sets(spec, spec.rate.min_rps)) {
      Status st = config::apply_set(&j, s);
      if (!st.ok()) return fail(kExitBadInput, spec.scenario_file + ": " + st.message());
    }
    auto sc = config::parse_scenario(j, spec.scenario_file, spec.scenario_dir);
    if (!sc.ok())
      return fail(kExitBadInput, sc.status().message() +
                                     " (the plan's base scenario, with "
                                     "the probe's rate and duration set)");
    calibration = sc->calibration;
    if (sc->workload.arrival.type == workload::ArrivalType::kTrace && spec.rate.max_rps <= 0)
      return fail(kExitBadInput, spec.file +
                                     ": /rate/max_rps: needed with a trace workload (there is no "
                                     "roofline bound without a length distribution)");
  }

  auto list = plan::enumerate_configs(spec);
  if (!list.ok()) return fail(kExitBadInput, list.status().message());
  const std::size_t total_configs = list->configs.size() + list->skipped.size();
  // How far the cost model can be trusted on each GPU type of the space.
  std::map<std::string, perf::Fidelity> fidelity;
  for (const auto& c : list->configs)
    fidelity.emplace(c.gpu, perf::resolve(calibration, c.gpu).fidelity);
  for (const auto& s : list->skipped)
    fidelity.emplace(s.config.gpu, perf::resolve(calibration, s.config.gpu).fidelity);

  std::vector<PrunedConfig> pruned;
  for (const auto& s : list->skipped) pruned.push_back({s.config, "invalid", s.reason});
  std::vector<SearchedConfig> to_search;
  for (const auto& c : list->configs) {
    plan::Screening s = plan::screen_config(spec, c);
    if (s.pruned) {
      pruned.push_back({c, s.kind, s.reason});
      continue;
    }
    SearchedConfig sc;
    sc.config = c;
    sc.bound_rps = s.bound_rps;
    const double upper =
        spec.rate.max_rps > 0 ? std::min(spec.rate.max_rps, s.bound_rps) : s.bound_rps;
    sc.search = plan::RateSearch(spec.rate.min_rps, upper, spec.rate.tolerance);
    to_search.push_back(std::move(sc));
  }
  const bool all_invalid =
      to_search.empty() &&
      std::all_of(pruned.begin(), pruned.end(), [](const auto& p) { return p.kind == "invalid"; });
  if (all_invalid) {
    std::string msg = spec.file +
                      ": /search: contradictory search space: no combination can run. For "
                      "example:";
    for (std::size_t i = 0; i < pruned.size() && i < 3; ++i)
      msg += "\n  " + pruned[i].config.key() + ": " + pruned[i].reason;
    return fail(kExitBadInput, msg);
  }
  if (o.shard_count > 1) {
    std::vector<SearchedConfig> mine;
    for (std::size_t i = 0; i < to_search.size(); ++i)
      if (static_cast<int>(i % o.shard_count) == o.shard_index)
        mine.push_back(std::move(to_search[i]));
    to_search = std::move(mine);
  }

  const std::string dir = o.out_dir.empty() ? "out/plan-" + spec.name : o.out_dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return fail(kExitBadInput, "--out " + dir + ": cannot create directory: " + ec.message());
  Cache cache = load_cache(dir, o.quiet);
  const std::string results_path =
      o.shard_count > 1
          ? fmt::format("{}/results.shard-{}-of-{}.jsonl", dir, o.shard_index, o.shard_count)
          : dir + "/results.jsonl";
  std::ofstream results(results_path, std::ios::app);
  if (!results) return fail(kExitFailure, results_path + ": cannot open for appending");

  // The search: each configuration's rate search is sequential; configurations run side by
  // side, one probe each at most, up to --jobs at a time.
  sim::ProbePool pool(o.jobs);
  Progress prog;
  prog.quiet = o.quiet;
  prog.total = to_search.size();
  std::vector<bool> busy(to_search.size(), false), finished(to_search.size(), false);
  std::map<std::uint64_t, double> inflight_rate;
  std::int64_t started = 0;
  bool stopped = false;
  auto record = [&](std::size_t i, double rate, const plan::ProbeMetrics& m) {
    auto& s = to_search[i];
    s.search.record(rate, plan::meets_slo(spec.slo, m, nullptr));
    s.probes.push_back({rate, m});
  };
  auto mark_if_done = [&](std::size_t i) {
    if (!finished[i] && to_search[i].search.done()) {
      finished[i] = true;
      ++prog.done;
    }
  };
  // Replay what the cache already knows (also counts configurations finished before).
  for (std::size_t i = 0; i < to_search.size(); ++i) {
    const auto it = cache.find(to_search[i].config.key());
    while (it != cache.end()) {
      auto r = to_search[i].search.next();
      if (!r) break;
      auto hit = it->second.find(*r);
      if (hit == it->second.end()) break;
      record(i, *r, hit->second);
      ++prog.reused;
      ++prog.sims;
    }
    mark_if_done(i);
  }
  prog.done_at_start = prog.done;
  prog.show(0);
  while (true) {
    for (std::size_t i = 0; i < to_search.size() && !pool.full() && !stopped; ++i) {
      while (!busy[i] && !finished[i]) {
        const double rate = *to_search[i].search.next();
        const auto hit = cache.find(to_search[i].config.key());
        if (hit != cache.end() && hit->second.count(rate)) {
          record(i, rate, hit->second.at(rate));
          ++prog.reused;
          ++prog.sims;
          mark_if_done(i);
          continue;
        }
        if (o.max_simulations >= 0 && started >= o.max_simulations) {
          stopped = true;
          break;
        }
        auto j = plan::probe_scenario_json(spec, to_search[i].config, rate);
        if (!j.ok()) {  // cannot happen after screening; recorded as a failed probe
          plan::ProbeMetrics m;
          m.error = j.status().message();
          record(i, rate, m);
          mark_if_done(i);
          continue;
        }
        Status st =
            pool.start(sim::ProbeJob{i, std::move(*j), spec.scenario_file, spec.scenario_dir});
        if (!st.ok()) return fail(kExitFailure, st.message());
        busy[i] = true;
        inflight_rate[i] = rate;
        ++started;
      }
    }
    if (pool.running() == 0) break;
    for (const auto& d : pool.wait()) {
      const std::size_t i = d.tag;
      const double rate = inflight_rate[i];
      busy[i] = false;
      record(i, rate, d.metrics);
      ++prog.sims;
      Json line = {{"key", to_search[i].config.key()},
                   {"rate_rps", rate},
                   {"meets", plan::meets_slo(spec.slo, d.metrics, nullptr)},
                   {"metrics", d.metrics.to_json()},
                   {"config", to_search[i].config.to_json()}};
      results << line.dump() << "\n";
      results.flush();
      mark_if_done(i);
    }
    prog.show(pool.running());
  }
  prog.show(0, true);
  if (!o.quiet) std::fprintf(stderr, "\n");
  if (stopped)
    return fail(kExitFailure,
                fmt::format("stopped after {} simulations (--max-simulations); rerun the same "
                            "command to resume from {}",
                            started, results_path));
  if (o.shard_count > 1) {
    std::printf(
        "shard %d/%d: searched %zu configurations (%lld simulations) into %s\n"
        "merge: prima plan %s --out %s (reuses every shard's results)\n",
        o.shard_index, o.shard_count, to_search.size(), static_cast<long long>(prog.sims),
        results_path.c_str(), o.plan_path.c_str(), dir.c_str());
    return kExitOk;
  }
  const double wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  Json out = build_plan_json(spec, to_search, pruned, fidelity, prog.sims, wall_s, total_configs);
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
  return kExitOk;
}

}  // namespace prima::cli
