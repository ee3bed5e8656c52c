// Reading a measured run for `prima replay`: one request per row, in the order the requests
// were sent. Three shapes are read (docs/replay.md):
//
//   bench JSONL  `prima bench --save-requests`: an optional header object {"format":
//                "prima-bench-requests", ...}, then one object per request (arrival_s,
//                prompt_tokens, output_tokens, ok, ttft_s, tpot_s, e2e_s, itl_s, queue_s, ...).
//   simulate CSV `prima simulate`'s requests.csv (columns id, outcome, first_scheduled_s,
//                finish_s, ...): written in the order requests ended, so it is sorted by
//                arrival (then id); only `completed` rows count as measured latencies.
//   CSV          any header with arrival_s, prompt_tokens, output_tokens, ttft_s, e2e_s
//                (tpot_s, queue_s, ok optional; other columns ignored).
//
// Time fields are named FIELD_UNIT with FIELD one of arrival, ttft, tpot, itl, e2e, queue and
// UNIT s, ms or us (converted to seconds); a bare FIELD or another unit is an error. Every
// error is one line naming the file, the line and the field:
//   m.csv:7: ttft_ms: expected a number, got "fast"
// Files other than requests.csv must be in send order: a row that arrives before the one
// above it is an error, never silently sorted. Pure functions.
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "engine/config/json_reader.h"
#include "engine/core/status.h"
#include "engine/replay/records.h"

namespace prima::replay {

enum class MeasuredFormat { kBenchJsonl, kJsonl, kSimulateCsv, kCsv };
// "bench_jsonl" (with the header line), "jsonl", "simulate_csv", "csv"
const char* measured_format_name(MeasuredFormat f);

struct MeasuredRun {
  std::string file;
  MeasuredFormat format = MeasuredFormat::kCsv;
  config::Json header;                    // the bench log's header object (null otherwise)
  std::vector<MeasuredRequest> requests;  // in arrival order
};

// The header line `prima bench --save-requests` writes first ("format" names it).
inline constexpr const char* kBenchRequestsFormat = "prima-bench-requests";

Result<MeasuredRun> read_measured(const std::string& path);
// The same from a stream; `name` names it in messages.
Result<MeasuredRun> parse_measured(std::istream& in, const std::string& name);

}  // namespace prima::replay
