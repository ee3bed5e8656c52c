// Trace readers: recorded request arrivals with their own lengths.
//
//   azure_csv: the Azure LLM inference trace. Header TIMESTAMP,ContextTokens,GeneratedTokens
//              (any column order, extra columns ignored); TIMESTAMP is "YYYY-MM-DD hh:mm:ss[.f]"
//              (any number of fractional digits) or plain seconds. Arrival = timestamp - first.
//   mooncake:  Mooncake's trace (kvcache-ai/Mooncake, FAST'25): one object per line with
//              "timestamp" (milliseconds; arrival = timestamp - first), "input_length",
//              "output_length" and "hash_ids" (one id per 512-token block of the prompt,
//              equal ids for equal blocks, so leading equal ids are a shared prefix).
//   jsonl:     one object per line: "arrival_s" (seconds from the start) or "timestamp"
//              (absolute seconds; arrival = timestamp - first), "prompt_tokens",
//              "output_tokens", optional "priority" ("high"|"normal"|"low") and "sla"
//              (seconds or "200ms"). Blank lines are allowed.
// Rows must not go back in time. A bad row is an error naming file:line and the field, e.g.
//   trace.csv:17: GeneratedTokens: expected a non-negative integer, got "abc"
// never a silently skipped row. Plain functions; the records are owned by the caller.
#pragma once

#include <cstdint>
#include <istream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"
#include "engine/core/types.h"
#include "engine/workload/workload.h"

namespace prima::workload {

struct TraceRecord {
  Time arrival_s = 0;  // from the start of the trace
  int prompt_tokens = 0;
  int output_tokens = 0;
  int priority = -1;  // Priority as int; -1 = not given (drawn from the priority mix)
  double sla_s = -1;  // -1 = not given (the class's SLA)
  // mooncake: the prompt's block hash ids, one per hash_block_tokens tokens (null: none).
  std::shared_ptr<const std::vector<std::uint64_t>> block_hashes;
  int hash_block_tokens = 0;
};

inline constexpr int kMooncakeBlockTokens = 512;

// Reads a whole trace file. `name` (default: the path) names it in messages.
Result<std::vector<TraceRecord>> read_trace(TraceFormat format, const std::string& path);
Result<std::vector<TraceRecord>> parse_azure_csv(std::istream& in, const std::string& name);
Result<std::vector<TraceRecord>> parse_jsonl(std::istream& in, const std::string& name);
Result<std::vector<TraceRecord>> parse_mooncake(std::istream& in, const std::string& name);

// "2023-11-16 18:15:46.6805900" (or "...T..."; or a plain number of seconds) to whole seconds
// since 1970-01-01 (UTC, no leap seconds) plus a fraction in [0, 1). False if malformed.
bool parse_timestamp(std::string_view s, std::int64_t* whole_s, double* frac_s);

}  // namespace prima::workload
