// Error bodies of the three APIs (see api_error.h).
#include "server/api_error.h"

#include <nlohmann/json.hpp>

namespace prima::server {

ApiError bad_field(const std::string& param, const std::string& message) {
  ApiError e;
  e.status = 400;
  e.param = param;
  e.message = message;
  return e;
}

ApiError model_not_found(const std::string& asked, const std::string& served) {
  ApiError e;
  e.status = 404;
  e.param = "model";
  e.type = "NotFoundError";
  e.code = "model_not_found";
  e.message = "The model '" + asked + "' does not exist; this server serves '" + served + "'";
  return e;
}

namespace {
// Messages may quote what a client sent: bytes that are not UTF-8 become U+FFFD rather than
// making the error itself unwritable.
std::string dump(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// TGI's error_type vocabulary (its client maps validation, overloaded and generation to its
// exceptions); other statuses are named plainly, so the client falls back on the status.
const char* tgi_error_type(int status) {
  if (status == 429 || status == 503) return "overloaded";
  if (status >= 500) return "generation";
  if (status == 400 || status == 413 || status == 422) return "validation";
  if (status == 401 || status == 403) return "authentication";
  if (status == 404) return "not_found";
  return "invalid_request";
}
}  // namespace

std::string error_body(const ApiError& e, ErrorStyle style) {
  using nlohmann::json;
  switch (style) {
    case ErrorStyle::kTgi:
      return dump(json{{"error", e.message}, {"error_type", tgi_error_type(e.status)}});
    case ErrorStyle::kKServe:
      return dump(json{{"error", e.message}});
    case ErrorStyle::kOpenAI:
      break;
  }
  json err{{"message", e.message},
           {"type", e.type},
           {"param", e.param.empty() ? json(nullptr) : json(e.param)},
           {"code", e.code.empty() ? json(nullptr) : json(e.code)}};
  return dump(json{{"error", err}});
}

void send_error(httplib::Response& res, const ApiError& e, ErrorStyle style) {
  res.status = e.status;
  if (e.status == 429 || e.status == 503) res.set_header("Retry-After", "1");
  if (e.status == 401) res.set_header("WWW-Authenticate", "Bearer");
  res.set_content(error_body(e, style), "application/json");
}

ErrorStyle style_for_path(const std::string& path) {
  if (path == "/v2" || path.rfind("/v2/", 0) == 0) return ErrorStyle::kKServe;
  if (path == "/" || path == "/info" || path.rfind("/generate", 0) == 0) return ErrorStyle::kTgi;
  return ErrorStyle::kOpenAI;  // /v1/..., vLLM's /tokenize and /detokenize, the rest
}

}  // namespace prima::server
