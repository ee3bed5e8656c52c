// JSON bodies of the routes that read them themselves (see json_body.h).
#include "server/json_body.h"

#include <fmt/format.h>

#include "engine/config/json_parse.h"

namespace prima::server {

using nlohmann::json;

std::optional<ApiError> parse_json_object(std::string_view body, const std::string& what,
                                          json* out) {
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

std::string brief_json(const json& v) {
  if (v.is_structured()) return v.type_name();
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

}  // namespace prima::server
