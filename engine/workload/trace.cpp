#include "engine/workload/trace.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>

#include "engine/config/json_parse.h"
#include "engine/config/json_reader.h"

namespace prima::workload {
namespace {

constexpr std::int64_t kMaxTokens = 1 << 30;

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> split_commas(std::string_view line) {
  std::vector<std::string_view> out;
  std::size_t start = 0;
  for (;;) {
    std::size_t p = line.find(',', start);
    out.push_back(trim(line.substr(start, p == std::string_view::npos ? p : p - start)));
    if (p == std::string_view::npos) return out;
    start = p + 1;
  }
}

std::string quoted(std::string_view s) {
  std::string q = "\"";
  q.append(s.substr(0, 40));
  if (s.size() > 40) q += "...";
  return q + "\"";
}

bool parse_int(std::string_view s, std::int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

// Digits only, exactly n of them.
bool digits(std::string_view s, std::size_t n, int* out) {
  if (s.size() != n) return false;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

// A file line's location for messages.
std::string at(const std::string& name, std::size_t line) {
  return name + ":" + std::to_string(line) + ": ";
}

}  // namespace

bool parse_timestamp(std::string_view s, std::int64_t* whole_s, double* frac_s) {
  s = trim(s);
  if (s.empty()) return false;
  // Plain seconds: a number without '-' after the first char and without ':'.
  if (s.find(':') == std::string_view::npos) {
    double v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v) || v < 0) return false;
    double w = std::floor(v);
    *whole_s = static_cast<std::int64_t>(w);
    *frac_s = v - w;
    return true;
  }
  // YYYY-MM-DD[ T]hh:mm:ss[.fff...]
  if (s.size() < 19 || s[4] != '-' || s[7] != '-' || (s[10] != ' ' && s[10] != 'T') ||
      s[13] != ':' || s[16] != ':')
    return false;
  int y, mo, d, h, mi, sec;
  if (!digits(s.substr(0, 4), 4, &y) || !digits(s.substr(5, 2), 2, &mo) ||
      !digits(s.substr(8, 2), 2, &d) || !digits(s.substr(11, 2), 2, &h) ||
      !digits(s.substr(14, 2), 2, &mi) || !digits(s.substr(17, 2), 2, &sec))
    return false;
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return false;
  double frac = 0;
  std::string_view rest = s.substr(19);
  if (!rest.empty()) {
    if (rest[0] != '.' || rest.size() < 2) return false;
    double scale = 0.1;
    for (char c : rest.substr(1)) {
      if (c < '0' || c > '9') return false;
      frac += (c - '0') * scale;
      scale *= 0.1;
    }
  }
  *whole_s = days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 +
             h * 3600 + mi * 60 + sec;
  *frac_s = frac;
  return true;
}

Result<std::vector<TraceRecord>> parse_azure_csv(std::istream& in, const std::string& name) {
  std::string line;
  std::size_t lineno = 0;
  if (!std::getline(in, line))
    return invalid_argument(name + ": empty file (expected the header " +
                            "TIMESTAMP,ContextTokens,GeneratedTokens)");
  ++lineno;
  if (line.size() >= 3 && line.compare(0, 3, "\xEF\xBB\xBF") == 0) line.erase(0, 3);  // BOM
  auto header = split_commas(line);
  int col_ts = -1, col_ctx = -1, col_gen = -1;
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == "TIMESTAMP")
      col_ts = static_cast<int>(i);
    else if (header[i] == "ContextTokens")
      col_ctx = static_cast<int>(i);
    else if (header[i] == "GeneratedTokens")
      col_gen = static_cast<int>(i);
  }
  if (col_ts < 0 || col_ctx < 0 || col_gen < 0)
    return invalid_argument(at(name, 1) + "expected a header naming the columns TIMESTAMP, " +
                            "ContextTokens and GeneratedTokens, got " + quoted(trim(line)));
  const std::size_t ncols = header.size();
  std::vector<TraceRecord> out;
  std::int64_t first_whole = 0;
  double first_frac = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (trim(line).empty()) continue;
    auto cols = split_commas(line);
    if (cols.size() != ncols)
      return invalid_argument(at(name, lineno) + "expected " + std::to_string(ncols) +
                              " comma-separated columns, got " + std::to_string(cols.size()));
    std::int64_t whole;
    double frac;
    if (!parse_timestamp(cols[col_ts], &whole, &frac))
      return invalid_argument(at(name, lineno) +
                              "TIMESTAMP: expected \"YYYY-MM-DD hh:mm:ss[.fraction]\" or "
                              "seconds, got " +
                              quoted(cols[col_ts]));
    std::int64_t ctx, gen;
    if (!parse_int(cols[col_ctx], &ctx) || ctx < 0 || ctx > kMaxTokens)
      return invalid_argument(at(name, lineno) +
                              "ContextTokens: expected a non-negative integer, got " +
                              quoted(cols[col_ctx]));
    if (!parse_int(cols[col_gen], &gen) || gen < 0 || gen > kMaxTokens)
      return invalid_argument(at(name, lineno) +
                              "GeneratedTokens: expected a non-negative integer, got " +
                              quoted(cols[col_gen]));
    if (out.empty()) {
      first_whole = whole;
      first_frac = frac;
    }
    TraceRecord r;
    r.arrival_s = static_cast<double>(whole - first_whole) + (frac - first_frac);
    r.prompt_tokens = static_cast<int>(ctx);
    r.output_tokens = static_cast<int>(gen);
    if (!out.empty() && r.arrival_s < out.back().arrival_s)
      return invalid_argument(at(name, lineno) + "TIMESTAMP: goes back in time (" +
                              quoted(cols[col_ts]) + " is before the previous row)");
    out.push_back(r);
  }
  if (in.bad()) return invalid_argument(name + ": read error");
  if (out.empty()) return invalid_argument(name + ": no requests in the trace");
  return out;
}

namespace {

// The tokens field `key` of a trace line: required, an integer in [0, 2^30].
int tokens_field(const config::JsonReader& rd, const char* key) {
  if (!rd.has(key)) rd.fail(key, "missing required field (expected an integer >= 0)");
  std::int64_t v = rd.non_negative_integer(key, 0);
  if (v > kMaxTokens) rd.fail(key, "expected at most 2^30 tokens, got " + std::to_string(v));
  return static_cast<int>(v);
}

// Reads a JSON-lines trace: each non-blank line must be a JSON object, which `record` turns
// into a TraceRecord through a reader whose messages read "file:line: /field: ..." (it throws
// ConfigError on a bad field). Rows must not go back in time; an empty trace is an error.
template <typename Record>
Result<std::vector<TraceRecord>> read_json_lines(std::istream& in, const std::string& name,
                                                 Record record) {
  std::vector<TraceRecord> out;
  std::string line;
  std::size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (trim(line).empty()) continue;
    config::JsonParseError perr;
    auto parsed = config::parse_json(line, &perr);
    if (!parsed)
      return invalid_argument(at(name, lineno) + "malformed JSON: column " +
                              std::to_string(perr.column) + ": " + perr.message);
    const config::Json j = std::move(*parsed);
    if (!j.is_object())
      return invalid_argument(at(name, lineno) + "expected a JSON object, got " +
                              config::describe(j));
    TraceRecord r;
    Status st = config::to_status([&] {
      config::JsonReader rd(j, name + ":" + std::to_string(lineno));
      r = record(rd, out.empty());
      rd.finish();
    });
    if (!st.ok()) return st;
    if (!out.empty() && r.arrival_s < out.back().arrival_s)
      return invalid_argument(at(name, lineno) +
                              "arrival goes back in time (before the previous line)");
    out.push_back(std::move(r));
  }
  if (in.bad()) return invalid_argument(name + ": read error");
  if (out.empty()) return invalid_argument(name + ": no requests in the trace");
  return out;
}

}  // namespace

Result<std::vector<TraceRecord>> parse_jsonl(std::istream& in, const std::string& name) {
  int key_kind = 0;  // 1 = arrival_s, 2 = timestamp
  double first_ts = 0;
  return read_json_lines(in, name, [&](const config::JsonReader& rd, bool first) {
    TraceRecord r;
    bool has_arrival = rd.has("arrival_s"), has_ts = rd.has("timestamp");
    if (has_arrival == has_ts)
      rd.fail_here("expected exactly one of \"arrival_s\" or \"timestamp\"");
    int kind = has_arrival ? 1 : 2;
    if (key_kind != 0 && kind != key_kind)
      rd.fail_here(
          std::string("mixes \"arrival_s\" and \"timestamp\"; use one for the whole file"));
    key_kind = kind;
    double t =
        kind == 1 ? rd.non_negative_number("arrival_s", 0) : rd.non_negative_number("timestamp", 0);
    rd.consume(kind == 1 ? "timestamp" : "arrival_s");
    if (first) first_ts = t;
    r.arrival_s = kind == 1 ? t : t - first_ts;
    r.prompt_tokens = tokens_field(rd, "prompt_tokens");
    r.output_tokens = tokens_field(rd, "output_tokens");
    if (rd.has("priority")) {
      Priority pr;
      parse_priority(rd.one_of("priority", {"high", "normal", "low"}), &pr);
      r.priority = static_cast<int>(pr);
    } else {
      rd.consume("priority");
    }
    if (rd.has("sla"))
      r.sla_s = rd.duration_s("sla");
    else
      rd.consume("sla");
    return r;
  });
}

Result<std::vector<TraceRecord>> parse_mooncake(std::istream& in, const std::string& name) {
  double first_ms = 0;
  return read_json_lines(in, name, [&](const config::JsonReader& rd, bool first) {
    TraceRecord r;
    if (!rd.has("timestamp"))
      rd.fail("timestamp", "missing required field (expected milliseconds >= 0)");
    const double ms = rd.non_negative_number("timestamp", 0);
    if (first) first_ms = ms;
    r.arrival_s = (ms - first_ms) / 1000;
    r.prompt_tokens = tokens_field(rd, "input_length");
    r.output_tokens = tokens_field(rd, "output_length");
    if (!rd.has("hash_ids")) rd.fail("hash_ids", "missing required field (expected a list)");
    const config::Json& ids = rd.value("hash_ids");
    if (!ids.is_array())
      rd.fail("hash_ids", "expected a list of block ids, got " + config::describe(ids));
    const std::size_t blocks =
        (static_cast<std::size_t>(r.prompt_tokens) + kMooncakeBlockTokens - 1) /
        kMooncakeBlockTokens;
    if (ids.size() > blocks)
      rd.fail("hash_ids", std::to_string(ids.size()) + " block ids for " +
                              std::to_string(r.prompt_tokens) + " input tokens (at most " +
                              std::to_string(blocks) + " blocks of " +
                              std::to_string(kMooncakeBlockTokens) + ")");
    auto hashes = std::make_shared<std::vector<std::uint64_t>>();
    hashes->reserve(ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) {
      if (!ids[i].is_number_integer() || ids[i].get<std::int64_t>() < 0)
        rd.fail("hash_ids", i,
                "expected a block id (an integer >= 0), got " + config::describe(ids[i]));
      hashes->push_back(ids[i].get<std::uint64_t>());
    }
    r.block_hashes = std::move(hashes);
    r.hash_block_tokens = kMooncakeBlockTokens;
    return r;
  });
}

Result<std::vector<TraceRecord>> read_trace(TraceFormat format, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return not_found(path + ": cannot open the trace file (does it exist and is it readable?)");
  switch (format) {
    case TraceFormat::kAzureCsv:
      return parse_azure_csv(in, path);
    case TraceFormat::kJsonl:
      return parse_jsonl(in, path);
    case TraceFormat::kMooncake:
      return parse_mooncake(in, path);
  }
  return internal_error("unknown trace format");
}

}  // namespace prima::workload
