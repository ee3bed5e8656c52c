// Bounded JSON parsing: every JSON text prima reads (config files, traces, HTTP bodies, load
// generator answers) goes through parse_json, which caps the nesting depth while it parses.
//
// nlohmann's parser is iterative, but copying, comparing or dumping a value recurses once per
// level, so a text of 50,000 '[' parses into a value that overflows the stack later. The cap
// stops the parse at the first array or object that opens past it; nothing deeper is built.
// Error messages name the byte, line and column, and replace bytes that are not UTF-8 (a
// message quoting them could not itself be written as JSON).
// Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace prima::config {

// The default cap: far above any config prima reads (scenarios nest about 5 levels) or any API
// body (about 6), far below what the stack can take.
inline constexpr int kMaxJsonDepth = 64;

struct JsonParseError {
  std::string message;   // "nesting deeper than 64 levels" or nlohmann's description
  std::size_t byte = 0;  // 0-based offset of the offending byte
  std::size_t line = 1, column = 1;
  bool too_deep = false;
};

// Parses `text`; nullopt and *error set when it is not JSON or nests deeper than max_depth
// (arrays and objects; the top-level value is depth 1). Never throws.
std::optional<nlohmann::json> parse_json(std::string_view text, JsonParseError* error,
                                         int max_depth = kMaxJsonDepth);

// "line L, column C (byte B): MESSAGE": for messages that quote a parse error.
std::string describe(const JsonParseError& e);

// `s` with every byte that is not part of valid UTF-8 replaced by U+FFFD.
std::string sanitize_utf8(std::string_view s);

}  // namespace prima::config
