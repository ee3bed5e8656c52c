// HttpServer: setup, routing, pre-routing checks, error bodies, /health (see http_server.h).
#include "server/http_server.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "server/routes.h"

namespace prima::server {

using nlohmann::json;

Status ServerOptions::validate() const {
  if (port < 0 || port > 65535)
    return invalid_argument(fmt::format("--port: {} is not a TCP port (0..65535)", port));
  if (max_body_bytes < 1024)
    return invalid_argument(fmt::format("--max-body-bytes: {} is below 1024", max_body_bytes));
  if (max_concurrent < 1)
    return invalid_argument(fmt::format("--max-concurrent: {} must be >= 1", max_concurrent));
  if (default_max_tokens < 1)
    return invalid_argument(
        fmt::format("--default-max-tokens: {} must be >= 1", default_max_tokens));
  if (max_tokens_cap < 0)
    return invalid_argument(fmt::format("--max-tokens: {} must be >= 0", max_tokens_cap));
  if (threads < 0 || threads > 100000)
    return invalid_argument(fmt::format("--threads: {} must be in 0..100000", threads));
  if (max_connections < 1)
    return invalid_argument(fmt::format("--max-connections: {} must be >= 1", max_connections));
  for (const auto& o : allowed_origins)
    if (o != "*" && o.rfind("http://", 0) != 0 && o.rfind("https://", 0) != 0)
      return invalid_argument(fmt::format(
          "--allowed-origins: '{}' must be * or an origin such as https://app.example.com", o));
  if (max_header_bytes < 1024)
    return invalid_argument(fmt::format("--max-header-bytes: {} is below 1024", max_header_bytes));
  for (auto [flag, v] :
       {std::pair{"--header-timeout", header_timeout_s},
        std::pair{"--body-timeout", body_timeout_s}, std::pair{"--idle-timeout", idle_timeout_s}})
    if (!(v > 0 && v <= 3600))
      return invalid_argument(fmt::format("{}: {} s must be > 0 and <= 3600", flag, v));
  return ok_status();
}

namespace {

// The client's X-Request-Id, echoed when it is a plain token (printable ASCII, at most 256
// characters): answers carry it instead of the server's own id (set_request_id).
void echo_request_id(const httplib::Request& req, httplib::Response& res) {
  const std::string id = req.get_header_value("X-Request-Id");
  if (id.empty() || id.size() > 256) return;
  for (unsigned char c : id)
    if (c < 0x21 || c > 0x7e) return;
  res.set_header("X-Request-Id", id);
}

}  // namespace

bool HttpServer::cors(const httplib::Request& req, httplib::Response& res) const {
  const auto& allowed = opts_.allowed_origins;
  const std::string origin = req.get_header_value("Origin");
  if (allowed.empty() || origin.empty()) return false;
  const bool any = std::find(allowed.begin(), allowed.end(), "*") != allowed.end();
  if (!any && std::find(allowed.begin(), allowed.end(), origin) == allowed.end()) return false;
  res.set_header("Access-Control-Allow-Origin", any ? "*" : origin);
  if (!any) res.set_header("Vary", "Origin");
  res.set_header("Access-Control-Expose-Headers", "X-Request-Id");
  if (req.method != "OPTIONS" || !req.has_header("Access-Control-Request-Method")) return false;
  // A preflight: what the browser may send next.
  res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
  const std::string asked = req.get_header_value("Access-Control-Request-Headers");
  res.set_header("Access-Control-Allow-Headers",
                 asked.empty() ? "Authorization, Content-Type, X-Request-Id" : asked);
  res.set_header("Access-Control-Max-Age", "600");
  res.status = 204;
  return true;
}

HttpServer::HttpServer(ServerOptions opts, EngineBridge* bridge, ModelInfo model,
                       std::string backend, ServerMetrics* metrics)
    : opts_(std::move(opts)),
      guard_(GuardOptions{opts_.api_key, opts_.max_concurrent}),
      metrics_(metrics) {
  ctx_.bridge = bridge;
  ctx_.guard = &guard_;
  ctx_.model = std::move(model);
  ctx_.limits.default_max_tokens = opts_.default_max_tokens;
  ctx_.limits.max_tokens_cap = opts_.max_tokens_cap;
  ctx_.backend = std::move(backend);
  ctx_.metrics = metrics;
  setup();
}

HttpServer::~HttpServer() {
  stop();
}

void HttpServer::setup() {
  const int threads = opts_.threads > 0 ? opts_.threads : opts_.max_concurrent + 16;
  ConnectionLimits cl;
  cl.worker_threads = threads;
  cl.max_connections = opts_.max_connections;
  cl.reactor.framing.max_body_bytes = opts_.max_body_bytes;
  cl.reactor.framing.max_header_bytes = opts_.max_header_bytes;
  cl.reactor.header_timeout_s = opts_.header_timeout_s;
  cl.reactor.body_timeout_s = opts_.body_timeout_s;
  cl.reactor.idle_timeout_s = opts_.idle_timeout_s;
  svr_.set_connection_limits(cl);
  // Called once for each request the connection layer refuses before any handler runs
  // (framing: 413, 431, 400, 501; deadlines: 408; the connection cap: 503 with no path).
  // Those whose request line names an API route count as refused requests, by status;
  // timeouts do not (a client that stalls is a dropped connection, not a refused request).
  svr_.error_body = [this](int status, const std::string& path, const std::string& message) {
    if (metrics_ && !path.empty() && status != 408 && Guard::is_protected(path))
      metrics_->on_http_error(status);
    ApiError e;
    e.status = status;
    e.type = status == 503 ? "service_unavailable" : "invalid_request_error";
    e.message = message;
    return error_body(e, style_for_path(path));
  };
  svr_.set_payload_max_length(opts_.max_body_bytes);
  svr_.set_keep_alive_max_count(1000);
  svr_.set_keep_alive_timeout(static_cast<time_t>(std::max(1.0, opts_.idle_timeout_s)));
  svr_.set_read_timeout(30, 0);
  svr_.set_write_timeout(30, 0);

  svr_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    take_accounted(res);  // a new request: no mark from an earlier one on this thread
    echo_request_id(req, res);
    if (cors(req, res)) return httplib::Server::HandlerResponse::Handled;  // a preflight
    if (auto e = guard_.check_auth(req)) {
      send_error(res, *e, style_for_path(req.path));
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Errors raised before (or outside) a handler come with no body: give them one.
  using HR = httplib::Server::HandlerResponse;
  svr_.set_error_handler(httplib::Server::HandlerWithResponse([this](const httplib::Request& req,
                                                                     httplib::Response& res) {
    if (!res.body.empty()) return HR::Unhandled;
    ApiError e;
    e.status = res.status;
    switch (res.status) {
      case 404:
        e.type = "not_found_error";
        e.message = fmt::format("no route for {} {}", req.method, req.path);
        break;
      case 405:
        e.message = fmt::format("method {} is not allowed on {}", req.method, req.path);
        break;
      case 413:
        e.message = fmt::format(
            "the request body is larger than the limit of {} bytes "
            "(--max-body-bytes)",
            opts_.max_body_bytes);
        break;
      case 414:
        e.message = "the request URI is too long";
        break;
      case 400:
        // cpp-httplib refuses a POST that announces no body before any handler runs.
        if ((req.method == "POST" || req.method == "PUT") && !req.has_header("Content-Length") &&
            !req.has_header("Transfer-Encoding")) {
          e.message = fmt::format(
              "{} {} has no body: send a JSON body with a Content-Length header (or "
              "Transfer-Encoding: chunked)",
              req.method, req.path);
          break;
        }
        e.message =
            fmt::format("the request to {} {} could not be read (HTTP 400)", req.method, req.path);
        break;
      default:
        e.message = fmt::format("HTTP {} on {} {}", res.status, req.method, req.path);
    }
    send_error(res, e, style_for_path(req.path));
    return HR::Handled;
  }));
  svr_.set_exception_handler(
      [](const httplib::Request& req, httplib::Response& res, std::exception_ptr ep) {
        ApiError e;
        e.status = 500;
        e.type = "internal_error";
        e.message = "internal error";
        try {
          if (ep) std::rethrow_exception(ep);
        } catch (const std::exception& x) {
          e.message = std::string("internal error: ") + x.what();
        } catch (...) {
        }
        send_error(res, e, style_for_path(req.path));
      });

  // After each answer (same worker thread as its handler): an API request that asked for work
  // (POST) and got an error answer that admission and the engine did not account for is
  // counted by its status.
  svr_.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    const bool accounted = take_accounted(res);
    if (metrics_ && !accounted && req.method == "POST" && res.status >= 400)
      metrics_->on_http_error(res.status);
  });

  svr_.Get("/health", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(health().dump(), "application/json");
  });
  if (metrics_)
    for (const char* path : {"/metrics", "/prima/metrics"})
      svr_.Get(path, [this](const httplib::Request&, httplib::Response& res) {
        res.set_content(metrics_->text(), "text/plain; version=0.0.4; charset=utf-8");
      });
  add_openai_routes(svr_, &ctx_);
  add_responses_routes(svr_, &ctx_);
  add_tgi_routes(svr_, &ctx_);
  add_kserve_routes(svr_, &ctx_);
}

json HttpServer::health() const {
  const EngineSnapshot s = ctx_.bridge->snapshot();
  // "unavailable": no replica serves (all taken out after failed steps); readiness is 503.
  const char* status = guard_.draining() ? "draining" : s.serving() ? "ok" : "unavailable";
  json j{{"status", status},
         {"model", ctx_.model.name},
         {"backend", ctx_.backend},
         {"in_system", s.in_system},
         {"running", s.running},
         {"waiting", s.waiting},
         {"kv_usage", s.kv_usage},
         {"kv_free_blocks", s.kv_free_blocks},
         {"kv_blocks", s.kv_blocks},
         {"open_requests", ctx_.bridge->open()},
         {"submitted", s.submitted},
         {"ended", s.ended},
         {"admitted", guard_.in_use()},
         {"max_concurrent", guard_.capacity()},
         {"connections", svr_.open_connections()},
         {"max_connections", svr_.max_connections()},
         {"engine_time_s", s.now_s}};
  if (s.published) {
    j["replicas"] = {{"active", s.replicas_active},
                     {"unhealthy", s.replicas_unhealthy},
                     {"loading", s.replicas_loading},
                     {"draining", s.replicas_draining}};
    j["requests_rerouted"] = s.reroutes;
    if (!s.replica_error.empty()) j["replica_error"] = s.replica_error;
  }
  if (health_extra) health_extra(&j);
  return j;
}

Status HttpServer::bind() {
  if (opts_.port == 0) {
    port_ = svr_.bind_to_any_port(opts_.host);
    if (port_ <= 0) return unavailable(fmt::format("cannot listen on {}:<any port>", opts_.host));
  } else {
    if (!svr_.bind_to_port(opts_.host, opts_.port))
      return unavailable(
          fmt::format("cannot listen on {}:{} (in use, or not an address of this "
                      "machine)",
                      opts_.host, opts_.port));
    port_ = opts_.port;
  }
  // Room for a burst of connections (the kernel caps it at net.core.somaxconn).
  svr_.set_listen_backlog(4096);
  return ok_status();
}

void HttpServer::serve() {
  {
    std::lock_guard<std::mutex> lock(serve_mu_);
    if (stop_requested_) return;
    serving_ = true;
  }
  svr_.listen_after_bind();
  served_ = true;
}

bool HttpServer::wait_drained(double timeout_s) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (guard_.in_use() > 0 || ctx_.bridge->open() > 0) {
    if (std::chrono::steady_clock::now() >= until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

void HttpServer::stop() {
  {
    std::lock_guard<std::mutex> lock(serve_mu_);
    stop_requested_ = true;
    if (!serving_) return;  // serve() has not begun: it will return at once
  }
  // httplib's stop() closes the listener only of a server marked running, which
  // listen_after_bind does as it starts: a stop() in between would be lost and serve() would
  // run on. Wait for the mark (or for serve() to have returned).
  while (!svr_.is_running() && !served_) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  svr_.stop();
}

}  // namespace prima::server
