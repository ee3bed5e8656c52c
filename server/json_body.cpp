// Request bodies as JSON objects (see json_body.h).
#include "server/json_body.h"

#include <fmt/format.h>

#include "engine/config/json_parse.h"

namespace prima::server {

using nlohmann::json;

std::optional<ApiError> parse_json_object(std::string_view body, const std::string& what,
                                          json* out) {
  if (body.find_first_not_of(" \t\r\n") == std::string_view::npos)
    return bad_field("",
                     fmt::format("{} is empty: send a JSON object (and a Content-Length)", what));
  config::JsonParseError err;
  auto parsed = config::parse_json(body, &err);  // nesting capped while parsing
  if (!parsed)
    return bad_field("", fmt::format("{} is not valid JSON: {}", what, config::describe(err)));
  if (!parsed->is_object())
    return bad_field("",
                     fmt::format("{} must be a JSON object, got {}", what, parsed->type_name()));
  *out = std::move(*parsed);
  return std::nullopt;
}

}  // namespace prima::server
