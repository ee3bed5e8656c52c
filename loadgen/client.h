// Sends one benchmark request over HTTP and measures it: cpp-httplib's Client (one per worker
// thread, keep-alive), streaming answers read with a content receiver through the incremental
// SseParser, so each token's arrival time is taken when its bytes arrive.
//
// Threading: a RequestClient belongs to one thread (it owns its connection). The steady clock
// passed in is shared and read-only.
#pragma once

#include <chrono>
#include <memory>
#include <string>

#include "engine/core/status.h"
#include "loadgen/api.h"
#include "loadgen/record.h"

namespace httplib {
class Client;
}

namespace prima::loadgen {

// "http://host:port[/prefix]" split into the part cpp-httplib connects to and a path prefix.
struct BaseUrl {
  std::string scheme_host_port;  // "http://127.0.0.1:8000"
  std::string prefix;            // "" or "/something" (no trailing slash)
};
Result<BaseUrl> parse_base_url(const std::string& url);

struct ClientOptions {
  BaseUrl url;
  Endpoint endpoint = Endpoint::kCompletions;
  BodyOptions body;
  std::string api_key;     // "Authorization: Bearer KEY" when not empty
  double timeout_s = 600;  // read timeout per request
  double connect_timeout_s = 10;
  bool keep_alive = true;                    // false: a new connection per request
  std::chrono::steady_clock::time_point t0;  // times are seconds since this
};

class RequestClient {
 public:
  explicit RequestClient(const ClientOptions& o);
  ~RequestClient();
  // Sends `p` with this prompt and waits for the whole answer. Never throws; a failure is
  // recorded in the result (ok = false, http_status, error).
  RequestResult send(const PlannedRequest& p, const std::string& prompt);

 private:
  double now() const;
  const ClientOptions o_;  // a copy: callers may pass a temporary
  std::unique_ptr<httplib::Client> cli_;
};

// GET {url}/v1/models: the first model's id (for --model's default).
Result<std::string> fetch_model_name(const ClientOptions& o);

}  // namespace prima::loadgen
