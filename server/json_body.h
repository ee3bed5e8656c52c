// Request bodies as JSON for the routes that read a body before (or besides) the request
// parser: the KServe v2 inference header and vLLM's /tokenize and /detokenize. Parsed with
// config::parse_json, so nesting is capped while parsing (config::kMaxJsonDepth, 64 levels):
// a value that passed can be re-serialized and walked safely. Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "server/api_error.h"

namespace prima::server {

// `body` as a JSON object; otherwise a 400 saying why (invalid JSON and where, nesting past
// the cap, or not an object). `what` names the body in messages ("the request body").
std::optional<ApiError> parse_json_object(std::string_view body, const std::string& what,
                                          nlohmann::json* out);

// A value for an error message: a scalar as JSON (at most 40 characters), or its type name
// ("array", "object") for a container, so a message never serializes client nesting.
std::string brief_json(const nlohmann::json& v);

}  // namespace prima::server
