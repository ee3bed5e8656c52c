// The per-request records a replay compares: what was measured (a `prima bench
// --save-requests` log, a `prima simulate` requests.csv or any CSV with the needed columns) and
// what the simulator gave for the same arrivals and lengths. Times are seconds; -1 means "not
// measured" (a run without streaming has no TTFT, a 1-token answer no TPOT). Plain values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace prima::replay {

struct MeasuredRequest {
  int line = 0;    // 1-based line of the file it came from (for messages)
  std::string id;  // as written; "" when the file has no id
  double arrival_s = 0;
  int prompt_tokens = 0;
  int output_tokens = 0;  // what the replay generates (a failed request: what it asked for)
  int priority = -1;      // Priority as int; -1 = not given
  bool ok = true;         // completed: its latencies count
  double ttft_s = -1, tpot_s = -1, e2e_s = -1, queue_s = -1;
  std::vector<double> itl_s;  // every gap between tokens; empty = not measured
};

struct SimulatedRequest {
  std::uint64_t id = 0;  // 1-based, in arrival order (the i-th measured request is id i)
  double arrival_s = 0;
  int prompt_tokens = 0;
  int output_tokens = 0;  // generated
  bool ok = false;        // completed
  double ttft_s = -1, tpot_s = -1, e2e_s = -1, queue_s = -1;
  std::vector<double> itl_s;  // gaps between consecutive tokens, when they were recorded
};

}  // namespace prima::replay
