// What one request of a benchmark was and what happened to it: the plan (when it was due,
// its lengths) and the client's measurements (send time, first token, every token gap, end),
// plus the timings the server reported about itself (prima serve's "prima" object or
// x-prima-sim-* headers: engine time, simulated seconds with the sim backend).
//
// Plain values: a worker thread fills one record; the runner collects them after the worker
// is done with it. Times are seconds on the bench's steady clock (0 = the run's start).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/core/types.h"

namespace prima::loadgen {

struct PlannedRequest {
  std::uint64_t index = 0;  // 0-based, in arrival order
  double due_s = 0;         // when the schedule wanted it sent
  int prompt_tokens = 0;    // planned prompt length (synthetic prompts are built to it)
  int output_tokens = 0;    // max_tokens asked for
  Priority priority = Priority::kNormal;
  double sla_s = 0;        // the workload's per-request latency target (bounds TTFT); 0 = none
  bool send_qos = false;   // send priority/sla fields (workloads that have them)
  std::uint64_t user = 0;  // closed-loop user (1..N), 0 for open loop
  int dataset_row = -1;    // the dataset prompt used, or -1 for a synthetic prompt
};

// The timings a server reported about the request (prima serve); has_* false when absent.
struct ServerTimings {
  bool has_ttft = false, has_e2e = false, has_queue = false;
  double ttft_s = 0, e2e_s = 0, queue_s = 0;
};

struct RequestResult {
  PlannedRequest plan;
  bool ok = false;
  int http_status = 0;        // 0 = no HTTP answer (connection refused, timeout...)
  std::string error;          // why it failed (one line)
  double send_s = 0;          // when the request was written
  double first_token_s = -1;  // streaming: when the first token arrived (-1 = none)
  double end_s = 0;           // when the answer was complete
  std::vector<double> itl_s;  // streaming: gaps between consecutive token-carrying events
  int output_tokens = 0;      // from the server's usage when given, else counted
  int prompt_tokens = 0;      // from the server's usage when given, else planned
  bool usage_reported = false;
  ServerTimings server;

  double e2e_s() const { return end_s - send_s; }
  double ttft_s() const { return first_token_s - send_s; }
  // (e2e - ttft) / (output tokens - 1); only with a first token and >= 2 tokens.
  double tpot_s() const { return (end_s - first_token_s) / static_cast<double>(output_tokens - 1); }
  bool has_ttft() const { return first_token_s >= 0; }
  bool has_tpot() const { return has_ttft() && output_tokens >= 2; }
};

}  // namespace prima::loadgen
