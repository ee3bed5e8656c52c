// The parallel rate search with its cache and progress bar (see plan_search.h).
#include "cli/plan_search.h"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "backends/sim/probe_pool.h"
#include "engine/capacity/prune.h"
#include "engine/config/json_parse.h"

namespace fs = std::filesystem;

namespace prima::cli {
namespace {

using config::Json;
using Clock = std::chrono::steady_clock;

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

// The state of one search: which configurations have a probe in flight, which are done.
class Search {
 public:
  Search(const capacity::PlanSpec& spec, const PlanOptions& o, const PlanCache& cache,
         std::vector<SearchedConfig>* configs, std::ostream* results)
      : spec_(spec),
        o_(o),
        cache_(cache),
        configs_(*configs),
        results_(*results),
        pool_(o.jobs),
        busy_(configs->size(), false),
        finished_(configs->size(), false) {
    prog_.quiet = o.quiet;
    prog_.total = configs->size();
  }

  PlanSearchResult run() {
    replay_cache();
    prog_.done_at_start = prog_.done;
    prog_.show(0);
    PlanSearchResult r;
    while (true) {
      for (std::size_t i = 0; i < configs_.size() && !pool_.full() && !stopped_; ++i) {
        r.status = advance(i);
        if (!r.status.ok()) return r;
      }
      if (pool_.running() == 0) break;
      collect();
      prog_.show(pool_.running());
    }
    prog_.show(0, true);
    if (!o_.quiet) std::fprintf(stderr, "\n");
    r.stopped = stopped_;
    r.started = started_;
    r.simulations = prog_.sims;
    return r;
  }

 private:
  const capacity::ProbeMetrics* cached(std::size_t i, double rate) const {
    const auto it = cache_.find(configs_[i].config.key());
    if (it == cache_.end()) return nullptr;
    const auto hit = it->second.find(rate);
    return hit == it->second.end() ? nullptr : &hit->second;
  }

  void record(std::size_t i, double rate, const capacity::ProbeMetrics& m) {
    auto& s = configs_[i];
    s.search.record(rate, capacity::meets_slo(spec_.slo, m, nullptr));
    s.probes.push_back({rate, m});
  }
  void record_cached(std::size_t i, double rate, const capacity::ProbeMetrics& m) {
    record(i, rate, m);
    ++prog_.reused;
    ++prog_.sims;
  }
  void mark_if_done(std::size_t i) {
    if (!finished_[i] && configs_[i].search.done()) {
      finished_[i] = true;
      ++prog_.done;
    }
  }

  // Replays what the cache already knows (also counts configurations finished before).
  void replay_cache() {
    for (std::size_t i = 0; i < configs_.size(); ++i) {
      while (auto rate = configs_[i].search.next()) {
        const capacity::ProbeMetrics* m = cached(i, *rate);
        if (!m) break;
        record_cached(i, *rate, *m);
      }
      mark_if_done(i);
    }
  }

  // Takes configuration i's search as far as the cache goes, then starts its next probe.
  Status advance(std::size_t i) {
    while (!busy_[i] && !finished_[i]) {
      const double rate = *configs_[i].search.next();
      if (const capacity::ProbeMetrics* m = cached(i, rate)) {
        record_cached(i, rate, *m);
        mark_if_done(i);
        continue;
      }
      if (o_.max_simulations >= 0 && started_ >= o_.max_simulations) {
        stopped_ = true;
        break;
      }
      auto j = capacity::probe_scenario_json(spec_, configs_[i].config, rate);
      if (!j.ok()) {  // cannot happen after screening; recorded as a failed probe
        capacity::ProbeMetrics m;
        m.error = j.status().message();
        record(i, rate, m);
        mark_if_done(i);
        continue;
      }
      Status st =
          pool_.start(sim::ProbeJob{i, std::move(*j), spec_.scenario_file, spec_.scenario_dir});
      if (!st.ok()) return st;
      busy_[i] = true;
      inflight_rate_[i] = rate;
      ++started_;
    }
    return ok_status();
  }

  // Records the probes that finish next, and appends them to the results file.
  void collect() {
    for (const auto& d : pool_.wait()) {
      const std::size_t i = d.tag;
      const double rate = inflight_rate_[i];
      busy_[i] = false;
      record(i, rate, d.metrics);
      ++prog_.sims;
      Json line = {{"key", configs_[i].config.key()},
                   {"rate_rps", rate},
                   {"meets", capacity::meets_slo(spec_.slo, d.metrics, nullptr)},
                   {"metrics", d.metrics.to_json()},
                   {"config", configs_[i].config.to_json()}};
      results_ << line.dump() << "\n";
      results_.flush();
      mark_if_done(i);
    }
  }

  const capacity::PlanSpec& spec_;
  const PlanOptions& o_;
  const PlanCache& cache_;
  std::vector<SearchedConfig>& configs_;
  std::ostream& results_;
  sim::ProbePool pool_;
  Progress prog_;
  std::vector<bool> busy_, finished_;
  std::map<std::uint64_t, double> inflight_rate_;
  std::int64_t started_ = 0;
  bool stopped_ = false;
};

}  // namespace

PlanCache load_plan_cache(const std::string& dir, bool quiet) {
  PlanCache cache;
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
            capacity::ProbeMetrics::from_json(j.at("metrics"));
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

PlanSearchResult search_plan(const capacity::PlanSpec& spec, const PlanOptions& o,
                             const PlanCache& cache, std::vector<SearchedConfig>* configs,
                             std::ostream* results) {
  return Search(spec, o, cache, configs, results).run();
}

}  // namespace prima::cli
