// Benchmark statistics from per-request results: TTFT, TPOT, ITL and E2E summaries (mean,
// p50, p90, p99, max: engine/metrics/summary.h, the percentiles report.json uses), throughput,
// and SLO attainment and goodput with report.json's definitions:
//   TTFT = first token - send; TPOT = (end - first token) / (output tokens - 1), requests with
//   >= 2 tokens; ITL = every gap between token-carrying stream events; E2E = end - send.
//   A request meets the SLO when it completed and every given bound holds (ttft_s, tpot_s,
//   e2e_s, and its own sla_s, which bounds TTFT). attainment = met / submitted; goodput_rps =
//   met / duration. Without streaming TTFT is not measured: a TTFT bound is checked against
//   E2E (an upper bound of TTFT) and a TPOT bound is not checked (listed in `unchecked`).
//
// Pure functions of their inputs.
#pragma once

#include <string>
#include <vector>

#include "engine/metrics/summary.h"
#include "loadgen/record.h"

namespace prima::loadgen {

struct SloBounds {
  double ttft_s = 0, tpot_s = 0, e2e_s = 0;  // 0 = not set
  bool any() const { return ttft_s > 0 || tpot_s > 0 || e2e_s > 0; }
};

struct BenchStats {
  std::size_t submitted = 0, completed = 0, failed = 0;
  double duration_s = 0;  // first send to last end
  metrics::Summary ttft, tpot, itl, e2e;
  // Server-reported timings (engine time) over completed requests that carried them.
  metrics::Summary server_ttft, server_e2e, server_queue;
  // Client minus server TTFT per request, when both are known (seconds, wall vs engine time).
  metrics::Summary ttft_client_minus_server;
  double requests_per_s = 0, output_tokens_per_s = 0, input_tokens_per_s = 0;
  long long output_tokens = 0, input_tokens = 0;
  std::size_t slo_met = 0;
  double slo_attainment = 0, goodput_rps = 0;
  std::vector<std::string> slo_unchecked;  // bounds that could not be checked
  // How late requests were sent compared with their schedule (client-side queueing).
  metrics::Summary send_lateness;
};

bool meets_slo(const RequestResult& r, const SloBounds& slo, bool streamed);

BenchStats compute_stats(const std::vector<RequestResult>& results, const SloBounds& slo,
                         bool streamed);

}  // namespace prima::loadgen
