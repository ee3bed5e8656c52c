// Shared pieces of the measured-run readers (measured.cpp: dispatch, field names, order,
// JSONL; measured_csv.cpp: CSV). Not part of the module's interface.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/replay/measured.h"

namespace prima::replay::internal {

enum class Field {
  kNone,
  kArrival,
  kTtft,
  kTpot,
  kItl,
  kE2e,
  kQueue,
  kPromptTokens,
  kOutputTokens
};

// Which field a column or key names, and the factor that turns its unit into seconds. Returns
// "" when understood (kNone: a column the replay does not read), else why not, e.g.
// `ttft_min: unknown unit "min" (use ttft_s, ttft_ms or ttft_us)`.
std::string resolve_field(std::string_view name, Field* field, double* to_seconds);
bool is_time(Field f);

// "name:line: " for messages.
std::string at(const std::string& name, int line);
// `"text"`, cut at 40 characters.
std::string quote_text(std::string_view s);
std::string_view trim(std::string_view s);

// Lines of the file, without line ends; lines[i] is line i + 1.
Result<MeasuredRun> parse_csv(const std::vector<std::string>& lines, const std::string& name);
Result<MeasuredRun> parse_jsonl(const std::vector<std::string>& lines, const std::string& name);

// Checks a parsed run: not empty; arrivals in send order (a simulate requests.csv is sorted
// by arrival instead); every measured time finite and >= 0 was checked by the parsers.
// `arrival_field` is the arrival column or key as the file names it.
Status finish_run(MeasuredRun* run, const std::string& arrival_field);

}  // namespace prima::replay::internal
