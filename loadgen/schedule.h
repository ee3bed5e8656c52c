// The workload a benchmark sends, as an engine WorkloadSpec (engine/workload/), so `prima
// bench` and `prima simulate` draw the same arrivals and lengths from the same seed.
//
//   --request-rate R (+ --arrival poisson|constant|gamma, --burstiness B)  open loop
//   --concurrency N                                 N closed-loop users, no think time
//   neither (rate inf, as vllm bench serve)         every request due at once: closed loop
//                                                   with min(num_prompts, max-concurrency) users
//   --trace FILE (azure csv or jsonl)               recorded arrivals and lengths
//   --scenario FILE                                 the scenario's workload, seed and SLO
// Lengths: --random-input-len / --random-output-len, fixed, or uniform in
// [len * (1 - r), len * (1 + r)] with --random-range-ratio r (vllm's meaning).
//
// plan_open_loop() runs an open-loop workload on a virtual clock and returns every arrival
// (tests, and `--dry-run`); a real run drives the same WorkloadDriver on the wall clock
// (loadgen/runner.h). Plain functions; the options struct is a value.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/workload/workload.h"

namespace prima::loadgen {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

struct ScheduleOptions {
  double request_rate = kInf;       // requests/s; inf = all at once (closed loop)
  std::string arrival = "poisson";  // poisson | constant | gamma
  double burstiness = 1;            // gamma shape (vllm): cv = 1/sqrt(B); 1 = poisson
  int concurrency = 0;              // > 0: closed loop with this many users
  int max_concurrency = 0;          // cap on requests in flight (0 = none)
  std::uint64_t num_prompts = 0;    // 0 = unbounded (needs duration_s)
  double duration_s = kInf;         // arrivals stop after this long
  int input_len = 1024, output_len = 128;
  double range_ratio = 0;              // 0: fixed lengths; (0, 1): uniform around the length
  std::string trace_path;              // replay a trace
  std::string trace_format = "azure";  // azure | jsonl
  double time_scale = 1;               // trace offsets are multiplied by this

  Status validate() const;
};

// The workload for the options (validated).
Result<workload::WorkloadSpec> workload_from_options(const ScheduleOptions& o);

// Every arrival of an open-loop workload (not closed loop), on a virtual clock, in order.
Result<std::vector<workload::RequestSpec>> plan_open_loop(const workload::WorkloadSpec& spec,
                                                          std::uint64_t seed, double duration_s);

// A one-line description: "poisson 10 req/s, 200 requests, input 1024, output 128".
std::string describe_workload(const workload::WorkloadSpec& spec, double duration_s);

}  // namespace prima::loadgen
