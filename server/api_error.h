// ApiError: an HTTP error answer (status, message naming the field, OpenAI type/param/code),
// and its bodies in each API's style: OpenAI {"error": {"message", "type", "param", "code"}},
// TGI {"error", "error_type"} (error_type from the status: "validation", "overloaded",
// "generation", ...), KServe v2 {"error"}. Plain values; thread-safe.
#pragma once

#include <httplib.h>

#include <string>

namespace prima::server {

struct ApiError {
  int status = 400;
  std::string message;
  std::string param;                           // the offending field ("" when none)
  std::string type = "invalid_request_error";  // OpenAI error type
  std::string code;                            // OpenAI error code ("" when none)
};

ApiError bad_field(const std::string& param, const std::string& message);
// 404 for a model this server does not serve (OpenAI's "model_not_found").
ApiError model_not_found(const std::string& asked, const std::string& served);

enum class ErrorStyle { kOpenAI, kTgi, kKServe };
std::string error_body(const ApiError& e, ErrorStyle style);
// Sets status, JSON body and (429, 503) Retry-After on the response.
void send_error(httplib::Response& res, const ApiError& e, ErrorStyle style);
// The style of the API a path belongs to: /v2, /v2/... KServe; /, /info, /generate... TGI;
// everything else (/v1/..., /tokenize, /detokenize) OpenAI.
ErrorStyle style_for_path(const std::string& path);

}  // namespace prima::server
