// Bounded JSON parsing (see json_parse.h).
#include "engine/config/json_parse.h"

#include <fmt/format.h>

namespace prima::config {
namespace {

using nlohmann::json;

struct TooDeep {};  // thrown from the parser callback: unwinds out of nlohmann's parser

// Offset of the bracket that opens the (max_depth + 1)-th level, skipping strings.
std::size_t find_too_deep(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return text.size();
}

void set_position(std::string_view text, std::size_t byte, JsonParseError* e) {
  e->byte = std::min(byte, text.size());
  e->line = 1;
  e->column = 1;
  for (std::size_t i = 0; i < e->byte; ++i) {
    if (text[i] == '\n') {
      ++e->line;
      e->column = 1;
    } else {
      ++e->column;
    }
  }
}

// Length of the valid UTF-8 sequence at s[i], or 0 when the byte there does not start one.
std::size_t utf8_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned lo = 0x80, hi = 0xBF;  // range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_length(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::optional<json> parse_json(std::string_view text, JsonParseError* error, int max_depth) {
  // The callback sees each array and object as it opens, with the number of containers
  // already open around it: the cap holds before anything deeper is built.
  const json::parser_callback_t cap = [max_depth](int depth, json::parse_event_t ev, json&) {
    if ((ev == json::parse_event_t::object_start || ev == json::parse_event_t::array_start) &&
        depth + 1 > max_depth)
      throw TooDeep{};
    return true;
  };
  JsonParseError e;
  try {
    return json::parse(text, cap, /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const TooDeep&) {
    e.too_deep = true;
    e.message = fmt::format("arrays and objects nest deeper than {} levels (the limit)", max_depth);
    set_position(text, find_too_deep(text, max_depth), &e);
  } catch (const json::parse_error& x) {
    // x.byte is 1-based: the byte the parser stopped at.
    set_position(text, x.byte > 0 ? x.byte - 1 : 0, &e);
    std::string what = x.what();
    if (auto p = what.find("parse error"); p != std::string::npos) what = what.substr(p);
    e.message = sanitize_utf8(what);
  } catch (const json::exception& x) {  // out_of_range: a number like 1e400
    e.message = sanitize_utf8(x.what());
  }
  if (error) *error = std::move(e);
  return std::nullopt;
}

std::string describe(const JsonParseError& e) {
  return fmt::format("line {}, column {} (byte {}): {}", e.line, e.column, e.byte, e.message);
}

}  // namespace prima::config
