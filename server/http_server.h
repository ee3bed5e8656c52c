// HttpServer: the HTTP front end of `prima serve` on cpp-httplib: server setup (thread pool,
// body size limit, timeouts), the pre-routing checks (API key), the error bodies of routes
// that fail before a handler answers (404, 413, ...), GET /health, and the API route sets
// (routes.h), GET /metrics and /prima/metrics (metrics.h). Draining: start_draining() makes new
// generation requests answer 503 while the ones in progress finish; wait_drained() waits for them;
// stop() closes the listener, whenever it comes: a stop() before serve() has begun makes
// serve() return at once (cpp-httplib's own stop() is lost unless the server already runs).
//
// Thread-safety: serve() blocks on the calling thread; handlers run on the pool's threads;
// start_draining, wait_drained, stop and port may be called from any thread.
// Ownership: borrows the EngineBridge (which must outlive the server); owns the context.
#pragma once

#include <httplib.h>

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "server/connection.h"
#include "server/engine_bridge.h"
#include "server/guard.h"
#include "server/metrics.h"
#include "server/server_context.h"

namespace prima::server {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                       // 0: any free port (see port())
  std::string api_key;                   // empty: no authentication
  std::size_t max_body_bytes = 1 << 20;  // larger bodies: 413
  int max_concurrent = 256;              // generation requests at once; more: 429
  int default_max_tokens = 16;           // when a request does not say
  int max_tokens_cap = 0;                // largest max_tokens (0: the model's context)
  int threads = 0;                       // HTTP worker threads (0: max_concurrent + 16)
  int max_connections = 10000;           // open connections at most; more: 503 at once
  std::size_t max_header_bytes = 32768;  // request line + headers; larger: 431
  double header_timeout_s = 10;          // first byte -> end of headers; later: 408
  double body_timeout_s = 30;            // end of headers -> end of body; later: 408
  double idle_timeout_s = 5;             // keep-alive idle (and before the first byte)
  // Browser origins allowed (CORS): "*" or "http(s)://host[:port]"; empty: no CORS headers.
  std::vector<std::string> allowed_origins;
  Status validate() const;
};

class HttpServer {
 public:
  // `metrics` (borrowed; may be null) answers GET /metrics and /prima/metrics and counts the
  // API requests refused (see server_context.h).
  HttpServer(ServerOptions opts, EngineBridge* bridge, ModelInfo model, std::string backend,
             ServerMetrics* metrics = nullptr);
  ~HttpServer();

  // Binds the listening socket; an error names the address.
  Status bind();
  int port() const { return port_; }
  // Serves until stop() (returns at once after an earlier stop()). Call bind() first.
  void serve();
  void start_draining() { guard_.start_draining(); }
  bool draining() const { return guard_.draining(); }
  // Waits until no generation request is in progress, at most timeout_s; true when drained.
  bool wait_drained(double timeout_s);
  // Ends serve(), or makes a serve() yet to come return at once; waits for a serve() in progress
  // to be running so that the stop takes effect. Any thread, any number of times.
  void stop();
  // Connections open now, and the cap in force (once serving).
  int open_connections() const { return svr_.open_connections(); }
  int max_connections() const { return svr_.max_connections(); }

  // /health's body (also used by tests and logs).
  nlohmann::json health() const;
  // Extra gauges for /health (e.g. the emulator's simulated time); optional.
  std::function<void(nlohmann::json*)> health_extra;

 private:
  void setup();
  // CORS (ServerOptions::allowed_origins): the headers for an allowed Origin; true when
  // `req` is a preflight, answered (204) here.
  bool cors(const httplib::Request& req, httplib::Response& res) const;

  ServerOptions opts_;
  Guard guard_;
  ServerContext ctx_;
  ServerMetrics* metrics_;
  ConnectionServer svr_;
  int port_ = 0;
  std::mutex serve_mu_;
  bool stop_requested_ = false;      // stop() was called: serve() does not start
  bool serving_ = false;             // serve() entered (or is entering) listen_after_bind
  std::atomic<bool> served_{false};  // serve()'s listen_after_bind returned
};

}  // namespace prima::server
