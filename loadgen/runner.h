// Runs a benchmark: the engine's WorkloadDriver posts arrivals on a WallRuntime (the calling
// thread runs its loop); each arrival becomes a job for a pool of worker threads, each with its
// own keep-alive HTTP client (loadgen/client.h). Workers are started as needed, up to
// max_workers (the --max-concurrency cap, or the closed-loop user count): a job that finds
// every worker busy waits, and that wait is reported as send lateness. Closed-loop users hear
// of their request's end through the runtime (WorkloadDriver::on_finished).
//
// Threading: run_bench() blocks until every arrival has been answered (or failed). Progress
// lines go to stderr once a second unless quiet. Results are handed back in arrival order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "engine/workload/workload.h"
#include "loadgen/client.h"
#include "loadgen/prompts.h"
#include "loadgen/record.h"

namespace prima::loadgen {

struct RunOptions {
  ClientOptions client;
  int max_workers = 256;                             // cap on requests in flight
  std::uint64_t seed = 0;                            // synthetic prompts' seed
  const std::vector<DatasetRow>* dataset = nullptr;  // prompts (and output lengths) to send
  bool send_qos = false;                             // send each request's priority and sla
  bool progress = true;                              // a line on stderr every second
};

struct RunResult {
  std::vector<RequestResult> requests;  // in arrival order
  double wall_s = 0;                    // the whole run, from its start to the last answer
};

Result<RunResult> run_bench(const workload::WorkloadSpec& spec, std::uint64_t seed,
                            double duration_s, const RunOptions& o);

}  // namespace prima::loadgen
