// Measured runs: which shape a file is, field names with units, send order, and the JSONL
// reader (measured.h). The CSV reader is measured_csv.cpp.
#include "engine/replay/measured.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <fstream>

#include "engine/config/json_parse.h"
#include "engine/core/types.h"
#include "engine/replay/measured_internal.h"

namespace prima::replay {
namespace internal {
namespace {

struct TimeBase {
  const char* base;
  Field field;
};
constexpr TimeBase kTimeBases[] = {{"arrival", Field::kArrival}, {"ttft", Field::kTtft},
                                   {"tpot", Field::kTpot},       {"itl", Field::kItl},
                                   {"e2e", Field::kE2e},         {"queue", Field::kQueue}};

struct Unit {
  const char* suffix;
  double to_seconds;
};
constexpr Unit kUnits[] = {{"s", 1.0}, {"ms", 1e-3}, {"us", 1e-6}};

}  // namespace

std::string resolve_field(std::string_view name, Field* field, double* to_seconds) {
  *field = Field::kNone;
  *to_seconds = 1;
  if (name == "prompt_tokens") {
    *field = Field::kPromptTokens;
    return "";
  }
  if (name == "output_tokens") {
    *field = Field::kOutputTokens;
    return "";
  }
  for (const TimeBase& b : kTimeBases) {
    const std::string_view base = b.base;
    if (name.substr(0, base.size()) != base) continue;
    if (name.size() == base.size())
      return fmt::format("{0}: a time needs its unit in the name ({0}_s, {0}_ms or {0}_us)", name);
    if (name[base.size()] != '_') continue;  // another word that starts the same
    const std::string_view unit = name.substr(base.size() + 1);
    for (const Unit& u : kUnits)
      if (unit == u.suffix) {
        *field = b.field;
        *to_seconds = u.to_seconds;
        return "";
      }
    return fmt::format("{}: unknown unit \"{}\" (use {}_s, {}_ms or {}_us)", name, unit, base, base,
                       base);
  }
  return "";
}

bool is_time(Field f) {
  return f == Field::kArrival || f == Field::kTtft || f == Field::kTpot || f == Field::kItl ||
         f == Field::kE2e || f == Field::kQueue;
}

std::string at(const std::string& name, int line) {
  return fmt::format("{}:{}: ", name, line);
}

std::string quote_text(std::string_view s) {
  std::string q = "\"";
  q.append(s.substr(0, 40));
  if (s.size() > 40) q += "...";
  return q + "\"";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

Status finish_run(MeasuredRun* run, const std::string& arrival_field) {
  auto& v = run->requests;
  if (v.empty()) return invalid_argument(run->file + ": no requests in the file (it is empty)");
  if (run->format == MeasuredFormat::kSimulateCsv) {
    // requests.csv lists requests as they ended; the replay needs them as they arrived.
    auto id_of = [](const MeasuredRequest& r) {
      std::int64_t id = 0;
      std::from_chars(r.id.data(), r.id.data() + r.id.size(), id);
      return id;
    };
    std::stable_sort(v.begin(), v.end(), [&](const MeasuredRequest& a, const MeasuredRequest& b) {
      if (a.arrival_s != b.arrival_s) return a.arrival_s < b.arrival_s;
      return id_of(a) < id_of(b);
    });
    return ok_status();
  }
  for (std::size_t i = 1; i < v.size(); ++i)
    if (v[i].arrival_s < v[i - 1].arrival_s)
      return invalid_argument(fmt::format(
          "{}{}: {} s is before the previous request's {} s (line {}); the requests must be in "
          "the order they were sent",
          at(run->file, v[i].line), arrival_field, v[i].arrival_s, v[i - 1].arrival_s,
          v[i - 1].line));
  return ok_status();
}

namespace {

// One JSONL request object.
Status parse_request(const config::Json& j, const std::string& name, int line, MeasuredRequest* r,
                     std::string* arrival_key) {
  const std::string where = at(name, line);
  bool seen_arrival = false, seen_prompt = false, seen_output = false, seen_e2e = false;
  std::int64_t max_tokens = -1;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const config::Json& v = it.value();
    if (k == "id") {
      r->id = v.is_string() ? v.get<std::string>() : v.dump();
      continue;
    }
    if (k == "ok") {
      if (!v.is_boolean())
        return invalid_argument(where + "ok: expected true or false, got " + config::describe(v));
      r->ok = v.get<bool>();
      continue;
    }
    if (k == "max_tokens") {
      if (v.is_null()) continue;
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0)
        return invalid_argument(where + "max_tokens: expected an integer >= 0, got " +
                                config::describe(v));
      max_tokens = v.get<std::int64_t>();
      continue;
    }
    if (k == "priority") {
      if (v.is_null()) continue;
      Priority p;
      if (!v.is_string() || !parse_priority(v.get<std::string>(), &p))
        return invalid_argument(where + "priority: expected \"high\", \"normal\" or \"low\", got " +
                                config::describe(v));
      r->priority = static_cast<int>(p);
      continue;
    }
    Field f;
    double scale;
    if (std::string err = resolve_field(k, &f, &scale); !err.empty())
      return invalid_argument(where + err);
    if (f == Field::kNone) continue;
    if (f == Field::kPromptTokens || f == Field::kOutputTokens) {
      if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > (1 << 30))
        return invalid_argument(where + k + ": expected an integer >= 0, got " +
                                config::describe(v));
      (f == Field::kPromptTokens ? r->prompt_tokens : r->output_tokens) =
          static_cast<int>(v.get<std::int64_t>());
      (f == Field::kPromptTokens ? seen_prompt : seen_output) = true;
      continue;
    }
    if (v.is_null()) continue;  // not measured
    auto time = [&](const config::Json& x, double* out) -> Status {
      if (!x.is_number())
        return invalid_argument(where + k + ": expected a number of seconds, got " +
                                config::describe(x));
      const double t = x.get<double>() * scale;
      if (!std::isfinite(t)) return invalid_argument(where + k + ": not a finite number");
      if (t < 0) return invalid_argument(where + k + ": negative time " + x.dump());
      *out = t;
      return ok_status();
    };
    if (f == Field::kItl) {
      if (!v.is_array())
        return invalid_argument(where + k + ": expected an array of gaps, got " +
                                config::describe(v));
      r->itl_s.resize(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) PRIMA_RETURN_IF_ERROR(time(v[i], &r->itl_s[i]));
      continue;
    }
    double* dst = f == Field::kArrival ? &r->arrival_s
                  : f == Field::kTtft  ? &r->ttft_s
                  : f == Field::kTpot  ? &r->tpot_s
                  : f == Field::kE2e   ? &r->e2e_s
                                       : &r->queue_s;
    PRIMA_RETURN_IF_ERROR(time(v, dst));
    if (f == Field::kArrival) {
      seen_arrival = true;
      *arrival_key = k;
    }
    if (f == Field::kE2e) seen_e2e = true;
  }
  for (auto [seen, key] :
       {std::pair{seen_arrival, "arrival_s"}, std::pair{seen_prompt, "prompt_tokens"},
        std::pair{seen_output, "output_tokens"}})
    if (!seen)
      return invalid_argument(where + key +
                              ": missing (every request needs arrival_s, prompt_tokens and "
                              "output_tokens)");
  if (r->ok && !seen_e2e)
    return invalid_argument(where + "e2e_s: missing for a request that completed (\"ok\": true)");
  if (!r->ok) {  // what it asked for; its latencies do not count
    if (max_tokens >= 0) r->output_tokens = static_cast<int>(max_tokens);
    r->ttft_s = r->tpot_s = r->e2e_s = r->queue_s = -1;
    r->itl_s.clear();
  }
  if (r->output_tokens < 2) r->tpot_s = -1;
  return ok_status();
}

}  // namespace

Result<MeasuredRun> parse_jsonl(const std::vector<std::string>& lines, const std::string& name) {
  MeasuredRun run;
  run.file = name;
  run.format = MeasuredFormat::kJsonl;
  bool first = true;
  std::string arrival_key = "arrival_s";
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const int line = static_cast<int>(i) + 1;
    if (trim(lines[i]).empty()) continue;
    config::JsonParseError perr;
    auto parsed = config::parse_json(lines[i], &perr);
    if (!parsed)
      return invalid_argument(at(name, line) + "malformed JSON: " + config::describe(perr));
    const config::Json& j = *parsed;
    if (!j.is_object())
      return invalid_argument(at(name, line) + "expected a JSON object, got " +
                              config::describe(j));
    if (first && j.contains("format")) {  // the header line
      first = false;
      const config::Json& f = j["format"];
      if (!f.is_string() || f.get<std::string>() != kBenchRequestsFormat)
        return invalid_argument(at(name, line) + "format: expected \"" + kBenchRequestsFormat +
                                "\", got " + config::describe(f));
      if (j.contains("version") && j["version"] != 1)
        return invalid_argument(at(name, line) + "version: this prima reads version 1, got " +
                                j["version"].dump());
      run.header = j;
      run.format = MeasuredFormat::kBenchJsonl;
      continue;
    }
    first = false;
    MeasuredRequest r;
    r.line = line;
    PRIMA_RETURN_IF_ERROR(parse_request(j, name, line, &r, &arrival_key));
    run.requests.push_back(std::move(r));
  }
  PRIMA_RETURN_IF_ERROR(finish_run(&run, arrival_key));
  return run;
}

}  // namespace internal

const char* measured_format_name(MeasuredFormat f) {
  switch (f) {
    case MeasuredFormat::kBenchJsonl:
      return "bench_jsonl";
    case MeasuredFormat::kJsonl:
      return "jsonl";
    case MeasuredFormat::kSimulateCsv:
      return "simulate_csv";
    case MeasuredFormat::kCsv:
      return "csv";
  }
  return "?";
}

Result<MeasuredRun> parse_measured(std::istream& in, const std::string& name) {
  std::vector<std::string> lines;
  std::string l;
  while (std::getline(in, l)) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(std::move(l));
  }
  if (in.bad()) return invalid_argument(name + ": read error");
  if (!lines.empty() && lines[0].compare(0, 3, "\xEF\xBB\xBF") == 0) lines[0].erase(0, 3);  // BOM
  for (const std::string& s : lines) {
    const std::string_view t = internal::trim(s);
    if (t.empty()) continue;
    return t.front() == '{' ? internal::parse_jsonl(lines, name) : internal::parse_csv(lines, name);
  }
  return invalid_argument(name + ": empty file (expected a prima bench --save-requests log or a " +
                          "CSV with a header line)");
}

Result<MeasuredRun> read_measured(const std::string& path) {
  std::ifstream in(path);
  if (!in) return invalid_argument(path + ": cannot open the measured file (does it exist?)");
  return parse_measured(in, path);
}

}  // namespace prima::replay
