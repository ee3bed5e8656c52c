// The CSV reader of measured runs (measured.h): a header naming the columns, one request per
// line. Fields may be double-quoted ("" inside quotes is a quote), as requests.csv quotes its
// `reason` column.
#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include "engine/core/types.h"
#include "engine/replay/measured_internal.h"

namespace prima::replay::internal {
namespace {

// Splits one CSV line; false when a quote is left open.
bool split_csv(std::string_view line, std::vector<std::string>* out) {
  out->clear();
  std::string cur;
  bool quoted_field = false, in_quotes = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (in_quotes) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        cur += '"';
        ++i;
      } else if (c == '"') {
        in_quotes = false;
      } else {
        cur += c;
      }
    } else if (c == '"' && trim(cur).empty()) {
      in_quotes = quoted_field = true;
      cur.clear();
    } else if (c == ',') {
      out->push_back(quoted_field ? cur : std::string(trim(cur)));
      cur.clear();
      quoted_field = false;
    } else {
      cur += c;
    }
  }
  if (in_quotes) return false;
  out->push_back(quoted_field ? cur : std::string(trim(cur)));
  return true;
}

bool parse_double(std::string_view s, double* out) {
  if (s.empty()) return false;
  if (s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

bool parse_int(std::string_view s, std::int64_t* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

struct Column {
  int index = -1;
  std::string name;
  double to_seconds = 1;
};

}  // namespace

Result<MeasuredRun> parse_csv(const std::vector<std::string>& lines, const std::string& name) {
  MeasuredRun run;
  run.file = name;
  std::size_t i = 0;
  while (i < lines.size() && trim(lines[i]).empty()) ++i;
  const int header_line = static_cast<int>(i) + 1;
  std::vector<std::string> header;
  if (!split_csv(lines[i], &header))
    return invalid_argument(at(name, header_line) + "unterminated quote in the header");
  std::map<Field, Column> cols;
  std::optional<int> ok_col, outcome_col, id_col, priority_col;
  bool first_scheduled = false, finish = false;
  for (std::size_t c = 0; c < header.size(); ++c) {
    const std::string& h = header[c];
    if (h == "ok") ok_col = static_cast<int>(c);
    if (h == "outcome") outcome_col = static_cast<int>(c);
    if (h == "id") id_col = static_cast<int>(c);
    if (h == "priority") priority_col = static_cast<int>(c);
    if (h == "first_scheduled_s") first_scheduled = true;
    if (h == "finish_s") finish = true;
    Field f;
    double scale;
    if (std::string err = resolve_field(h, &f, &scale); !err.empty())
      return invalid_argument(at(name, header_line) + err);
    if (f == Field::kNone) continue;
    if (f == Field::kItl)
      return invalid_argument(at(name, header_line) + h +
                              ": a CSV cannot hold the gaps of every token (use the JSONL log "
                              "of prima bench --save-requests)");
    if (auto it = cols.find(f); it != cols.end())
      return invalid_argument(at(name, header_line) + h + ": the same field as column " +
                              it->second.name);
    cols[f] = {static_cast<int>(c), h, scale};
  }
  for (auto [f, key] :
       {std::pair{Field::kArrival, "arrival_s"}, std::pair{Field::kPromptTokens, "prompt_tokens"},
        std::pair{Field::kOutputTokens, "output_tokens"}, std::pair{Field::kTtft, "ttft_s"},
        std::pair{Field::kE2e, "e2e_s"}})
    if (!cols.count(f))
      return invalid_argument(at(name, header_line) + key +
                              ": missing column (a measured CSV needs arrival_s, prompt_tokens, "
                              "output_tokens, ttft_s and e2e_s; tpot_s and queue_s are optional)");
  if (id_col && outcome_col && first_scheduled && finish) run.format = MeasuredFormat::kSimulateCsv;

  std::vector<std::string> cells;
  for (++i; i < lines.size(); ++i) {
    if (trim(lines[i]).empty()) continue;
    const int line = static_cast<int>(i) + 1;
    const std::string where = at(name, line);
    if (!split_csv(lines[i], &cells)) return invalid_argument(where + "unterminated quote");
    if (cells.size() != header.size())
      return invalid_argument(fmt::format("{}expected {} comma-separated columns, got {}", where,
                                          header.size(), cells.size()));
    MeasuredRequest r;
    r.line = line;
    if (id_col) r.id = cells[*id_col];
    if (outcome_col) r.ok = cells[*outcome_col] == "completed";
    if (ok_col) {
      const std::string& v = cells[*ok_col];
      const bool yes = v == "true" || v == "1" || v == "True" || v == "TRUE";
      const bool no = v == "false" || v == "0" || v == "False" || v == "FALSE";
      if (!yes && !no)
        return invalid_argument(where + "ok: expected true or false, got " + quote_text(v));
      if (no) r.ok = false;
    }
    if (priority_col && !cells[*priority_col].empty()) {
      Priority p;
      if (!parse_priority(cells[*priority_col], &p))
        return invalid_argument(where + "priority: expected high, normal or low, got " +
                                quote_text(cells[*priority_col]));
      r.priority = static_cast<int>(p);
    }
    for (const auto& [f, col] : cols) {
      const std::string& v = cells[col.index];
      if (f == Field::kPromptTokens || f == Field::kOutputTokens) {
        std::int64_t n;
        if (!parse_int(v, &n) || n < 0 || n > (1 << 30))
          return invalid_argument(where + col.name + ": expected an integer >= 0, got " +
                                  quote_text(v));
        (f == Field::kPromptTokens ? r.prompt_tokens : r.output_tokens) = static_cast<int>(n);
        continue;
      }
      // A time. Empty: not measured, which only optional columns and failed requests may be.
      const bool required =
          f == Field::kArrival || (r.ok && (f == Field::kTtft || f == Field::kE2e));
      if (v.empty() && !required) continue;
      double t;
      if (!parse_double(v, &t))
        return invalid_argument(where + col.name + ": expected a number, got " +
                                (v.empty() ? std::string("an empty cell") : quote_text(v)));
      t *= col.to_seconds;
      if (!std::isfinite(t)) return invalid_argument(where + col.name + ": not a finite number");
      if (t < 0) return invalid_argument(where + col.name + ": negative time " + v);
      double* dst = f == Field::kArrival ? &r.arrival_s
                    : f == Field::kTtft  ? &r.ttft_s
                    : f == Field::kTpot  ? &r.tpot_s
                    : f == Field::kE2e   ? &r.e2e_s
                                         : &r.queue_s;
      *dst = t;
    }
    if (!r.ok) r.ttft_s = r.tpot_s = r.e2e_s = r.queue_s = -1;
    if (r.output_tokens < 2) r.tpot_s = -1;
    run.requests.push_back(std::move(r));
  }
  PRIMA_RETURN_IF_ERROR(finish_run(&run, cols[Field::kArrival].name));
  return run;
}

}  // namespace prima::replay::internal
