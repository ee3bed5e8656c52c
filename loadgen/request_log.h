// `prima bench --save-requests FILE`: every request of a run as JSONL, for `prima replay` to
// hold the simulator against (docs/bench.md, "Per-request log"). The first line is a header
// object, {"format": "prima-bench-requests", "version": 1, "url", "endpoint", "model",
// "stream", "seed", "workload", "requests"}; then one object per request in the order they
// were sent: id, arrival_s (send time, seconds from the run's start), due_s, prompt_tokens,
// output_tokens, max_tokens, ok, http_status, ttft_s, tpot_s, e2e_s, itl_s, and queue_s /
// server_ttft_s / server_e2e_s when the server reported them, priority / sla_s when the
// requests carried them, error when it failed. Latencies not measured are null.
//
// Pure functions apart from writing the file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "loadgen/output.h"
#include "loadgen/record.h"

namespace prima::loadgen {

inline constexpr const char* kRequestLogFormat = "prima-bench-requests";
inline constexpr int kRequestLogVersion = 1;

nlohmann::ordered_json request_log_header(const BenchInfo& info, std::size_t requests);
nlohmann::ordered_json request_log_record(const RequestResult& r);
// The log as text: the header, then the records sorted by send time (stable: a tie keeps
// arrival order).
std::string request_log(const BenchInfo& info, const std::vector<RequestResult>& results);

}  // namespace prima::loadgen
