// A scenario as the replay of a measured run (replay_scenario.h).
#include "engine/replay/replay_scenario.h"

#include <fmt/format.h>

#include <cstdio>

#include "engine/core/types.h"
#include "engine/perf/engine_profile.h"

namespace prima::replay {

Status check_fits_scenario(const MeasuredRun& run, const scenario::Scenario& sc) {
  for (const MeasuredRequest& r : run.requests) {
    if (!r.ok) continue;
    const std::int64_t need = std::int64_t{r.prompt_tokens} + r.output_tokens;
    if (need > sc.max_model_len)
      return invalid_argument(fmt::format(
          "{}:{}: prompt_tokens + output_tokens: {} + {} = {} is over the scenario's "
          "max_model_len {} ({}): the scenario does not describe the server that answered it",
          run.file, r.line, r.prompt_tokens, r.output_tokens, need, sc.max_model_len, sc.file));
  }
  return ok_status();
}

Status write_replay_trace(const MeasuredRun& run, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return invalid_argument(path + ": cannot write the replay trace");
  for (const MeasuredRequest& r : run.requests) {
    std::string line =
        fmt::format(R"({{"arrival_s": {:.17g}, "prompt_tokens": {}, "output_tokens": {})",
                    r.arrival_s, r.prompt_tokens, r.output_tokens);
    if (r.priority >= 0)
      line +=
          fmt::format(R"(, "priority": "{}")", priority_name(static_cast<Priority>(r.priority)));
    line += "}\n";
    std::fputs(line.c_str(), f);
  }
  return std::fclose(f) == 0 ? ok_status()
                             : invalid_argument(path + ": cannot write the replay trace");
}

void use_replay_trace(scenario::Scenario* sc, const std::string& trace_path,
                      const MeasuredRun& run) {
  workload::ArrivalSpec& a = sc->workload.arrival;
  a = workload::ArrivalSpec{};
  a.type = workload::ArrivalType::kTrace;
  a.format = workload::TraceFormat::kJsonl;
  a.path = trace_path;
  a.rate_rps = 0;  // as recorded
  a.time_scale = 1;
  a.loop = false;
  sc->workload.max_requests = 0;
  // Arrivals stop at duration_s (exclusive): one second past the last one holds them all.
  sc->duration_s = run.requests.back().arrival_s + 1.0;
}

void set_gpu_efficiency(scenario::Scenario* sc, const perf::Efficiency& e) {
  const std::string& gpu = sc->topology.gpu.name;
  sc->calibration.per_gpu[gpu] = e;  // its hardware terms
  auto engine = std::make_shared<perf::EngineProfile>(
      sc->calibration.engine ? *sc->calibration.engine : perf::EngineProfile{});
  engine->per_gpu[gpu] = e;  // its engine terms
  sc->calibration.engine = engine;
}

}  // namespace prima::replay
