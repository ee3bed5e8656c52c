// Request bodies as JSON: parsing a body into an object, and the border where the errors of
// its fields become 400s. Parsed with config::parse_json, so nesting is capped while parsing
// (config::kMaxJsonDepth, 64 levels): a value that passed can be re-serialized and walked
// safely. Fields are read with config::JsonReader::request_body, which throws a
// config::ConfigError naming the field; field_errors() catches it. Pure functions;
// thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "engine/config/json_reader.h"
#include "server/api_error.h"

namespace prima::server {

// `body` as a JSON object; otherwise a 400 saying why (invalid JSON and where, nesting past
// the cap, or not an object). `what` names the body in messages ("the request body").
std::optional<ApiError> parse_json_object(std::string_view body, const std::string& what,
                                          nlohmann::json* out);

// Runs `read` (which returns std::optional<ApiError>); a config::ConfigError it throws (a
// field of the wrong type, out of range or refused) becomes a 400 whose param is that field.
template <typename Read>
std::optional<ApiError> field_errors(Read&& read) {
  try {
    return read();
  } catch (const config::ConfigError& e) {
    return bad_field(e.field(), e.what());
  }
}

}  // namespace prima::server
