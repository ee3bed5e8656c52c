// Guard: API key check, admission slots and draining (see guard.h).
#include "server/guard.h"

#include <fmt/format.h>

namespace prima::server {
namespace {

bool equal_constant_time(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

}  // namespace

bool Guard::is_protected(const std::string& path) {
  return !(path == "/health" || path == "/metrics" || path == "/prima/metrics" ||
           path.rfind("/v2/health/", 0) == 0);
}

std::optional<ApiError> Guard::check_auth(const httplib::Request& req) const {
  if (opts_.api_key.empty() || !is_protected(req.path)) return std::nullopt;
  ApiError e;
  e.status = 401;
  e.type = "authentication_error";
  e.code = "invalid_api_key";
  const std::string h = req.get_header_value("Authorization");
  const std::string prefix = "Bearer ";
  if (h.empty()) {
    e.message = "missing API key: send the header 'Authorization: Bearer <key>'";
    return e;
  }
  if (h.rfind(prefix, 0) != 0 || !equal_constant_time(h.substr(prefix.size()), opts_.api_key)) {
    e.message = "incorrect API key in the 'Authorization' header";
    return e;
  }
  return std::nullopt;
}

Guard::Slot Guard::admit(ApiError* why) {
  if (draining_) {
    why->status = 503;
    why->type = "service_unavailable";
    why->message = "the server is shutting down and accepts no new requests";
    return nullptr;
  }
  const int n = ++in_use_;
  if (n > opts_.max_concurrent) {
    --in_use_;
    why->status = 429;
    why->type = "rate_limit_exceeded";
    why->message =
        fmt::format("too many requests: {} are in progress (--max-concurrent); retry later",
                    opts_.max_concurrent);
    return nullptr;
  }
  // A token whose deleter gives the place back.
  return Slot(static_cast<void*>(this), [](void* g) { --static_cast<Guard*>(g)->in_use_; });
}

}  // namespace prima::server
