// The parallel rate search with its cache (see plan_search.h).
#include "engine/capacity/plan_search.h"

#include <filesystem>
#include <fstream>

#include "engine/capacity/prune.h"
#include "engine/config/json_parse.h"

namespace fs = std::filesystem;

namespace prima::capacity {
namespace {

using config::Json;

// The state of one search: which configurations have a probe in flight, which are done.
class Search {
 public:
  Search(const PlanSpec& spec, const SearchControl& control, const PlanCache& cache,
         ProbeRunner* runner, std::vector<SearchedConfig>* configs, std::ostream* results)
      : spec_(spec),
        control_(control),
        cache_(cache),
        configs_(*configs),
        results_(*results),
        pool_(*runner),
        busy_(configs->size(), false),
        finished_(configs->size(), false) {
    prog_.total = configs->size();
  }

  PlanSearchResult run() {
    replay_cache();
    prog_.done_before = prog_.done;
    show();
    PlanSearchResult r;
    while (true) {
      for (std::size_t i = 0; i < configs_.size() && !pool_.full() && !stopped_; ++i) {
        r.status = advance(i);
        if (!r.status.ok()) return r;
      }
      if (pool_.running() == 0) break;
      collect();
      show();
    }
    prog_.final = true;
    show();
    r.stopped = stopped_;
    r.started = started_;
    r.simulations = prog_.simulations;
    return r;
  }

 private:
  void show() {
    prog_.running = pool_.running();
    if (control_.progress) control_.progress(prog_);
  }

  const ProbeMetrics* cached(std::size_t i, double rate) const {
    const auto it = cache_.find(configs_[i].config.key());
    if (it == cache_.end()) return nullptr;
    const auto hit = it->second.find(rate);
    return hit == it->second.end() ? nullptr : &hit->second;
  }

  void record(std::size_t i, double rate, const ProbeMetrics& m) {
    auto& s = configs_[i];
    s.search.record(rate, meets_slo(spec_.slo, m, nullptr));
    s.probes.push_back({rate, m});
  }
  void record_cached(std::size_t i, double rate, const ProbeMetrics& m) {
    record(i, rate, m);
    ++prog_.reused;
    ++prog_.simulations;
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
        const ProbeMetrics* m = cached(i, *rate);
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
      if (const ProbeMetrics* m = cached(i, rate)) {
        record_cached(i, rate, *m);
        mark_if_done(i);
        continue;
      }
      if (control_.max_simulations >= 0 && started_ >= control_.max_simulations) {
        stopped_ = true;
        break;
      }
      auto j = probe_scenario_json(spec_, configs_[i].config, rate);
      if (!j.ok()) {  // cannot happen after screening; recorded as a failed probe
        ProbeMetrics m;
        m.error = j.status().message();
        record(i, rate, m);
        mark_if_done(i);
        continue;
      }
      Status st = pool_.start(ProbeJob{i, std::move(*j), spec_.scenario_file, spec_.scenario_dir});
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
      ++prog_.simulations;
      Json line = {{"key", configs_[i].config.key()},
                   {"rate_rps", rate},
                   {"meets", meets_slo(spec_.slo, d.metrics, nullptr)},
                   {"metrics", d.metrics.to_json()},
                   {"config", configs_[i].config.to_json()}};
      results_ << line.dump() << "\n";
      results_.flush();
      mark_if_done(i);
    }
  }

  const PlanSpec& spec_;
  const SearchControl& control_;
  const PlanCache& cache_;
  std::vector<SearchedConfig>& configs_;
  std::ostream& results_;
  ProbeRunner& pool_;
  SearchProgress prog_;
  std::vector<bool> busy_, finished_;
  std::map<std::uint64_t, double> inflight_rate_;
  std::int64_t started_ = 0;
  bool stopped_ = false;
};

}  // namespace

PlanCache load_plan_cache(const std::string& dir,
                          const std::function<void(const std::string&)>& note) {
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
            ProbeMetrics::from_json(j.at("metrics"));
      } catch (const std::exception&) {
        // A line cut short by a kill: its simulation is simply run again.
        if (note)
          note(e.path().string() + ":" + std::to_string(lineno) + ": skipping an unreadable line");
      }
    }
  }
  return cache;
}

PlanSearchResult search_plan(const PlanSpec& spec, const SearchControl& control,
                             const PlanCache& cache, ProbeRunner* runner,
                             std::vector<SearchedConfig>* configs, std::ostream* results) {
  return Search(spec, control, cache, runner, configs, results).run();
}

}  // namespace prima::capacity
