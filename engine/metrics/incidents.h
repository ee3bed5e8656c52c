// Incident summaries for report.json's "incidents": one entry per fault window, comparing the
// E2E latency of requests that were in flight during the window with the others.
//   inside:  requests whose [arrival, finish] overlaps [start_s, end_s] (completed ones count
//            for latency; failed ones are counted separately);
//   outside: every other completed request.
// A window that never ends (end_s infinite) is closed at the end of the run and marked
// "ongoing". Keys: fault, type, target, start_s, end_s, ongoing, requests_inside,
// requests_outside, failed_inside, e2e_p99_inside_s, e2e_p99_outside_s, e2e_p50_inside_s,
// e2e_p50_outside_s, ttft_p99_inside_s, ttft_p99_outside_s. Pure function.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/metrics/recorder.h"

namespace prima::metrics {

struct FaultWindow {
  std::string fault;   // label ("thermal#0" or the fault's name)
  std::string type;    // "thermal", "node_failure", ...
  std::string target;  // "node 1", "link node0_nic", ...
  double start_s = 0;
  double end_s = 0;  // may be +infinity
};

nlohmann::ordered_json incidents_json(const Recorder& rec, const std::vector<FaultWindow>& windows,
                                      double run_end_s);

}  // namespace prima::metrics
