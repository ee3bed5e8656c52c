// One benchmark request over HTTP with cpp-httplib (see client.h).
#include "loadgen/client.h"

#include <fmt/format.h>
#include <httplib.h>

#include <nlohmann/json.hpp>

#include "engine/config/json_parse.h"
#include "loadgen/sse_parser.h"

namespace prima::loadgen {
namespace {

void set_timeouts(httplib::Client& c, const ClientOptions& o) {
  auto usec = [](double s) { return std::chrono::microseconds(static_cast<long long>(s * 1e6)); };
  c.set_connection_timeout(usec(o.connect_timeout_s));
  c.set_read_timeout(usec(o.timeout_s));
  c.set_write_timeout(usec(o.timeout_s));
}

httplib::Headers headers_for(const ClientOptions& o) {
  httplib::Headers h;
  if (!o.api_key.empty()) h.emplace("Authorization", "Bearer " + o.api_key);
  return h;
}

double header_double(const httplib::Headers& h, const char* k, bool* has) {
  auto it = h.find(k);
  if (it == h.end()) return 0;
  try {
    double v = std::stod(it->second);
    *has = true;
    return v;
  } catch (...) {
    return 0;
  }
}

std::string shorten(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  if (s.size() > 200) s = s.substr(0, 200) + "...";
  return s;
}

}  // namespace

Result<BaseUrl> parse_base_url(const std::string& url) {
  const auto sep = url.find("://");
  if (sep == std::string::npos)
    return invalid_argument("--url '" + url + "': expected http://HOST:PORT");
  const std::string scheme = url.substr(0, sep);
  if (scheme != "http" && scheme != "https")
    return invalid_argument("--url '" + url + "': the scheme must be http or https");
  const auto path = url.find('/', sep + 3);
  BaseUrl b;
  b.scheme_host_port = url.substr(0, path);
  if (b.scheme_host_port.size() <= sep + 3) return invalid_argument("--url '" + url + "': no host");
  if (path != std::string::npos) {
    b.prefix = url.substr(path);
    while (!b.prefix.empty() && b.prefix.back() == '/') b.prefix.pop_back();
  }
  return b;
}

RequestClient::RequestClient(const ClientOptions& o)
    : o_(o), cli_(std::make_unique<httplib::Client>(o.url.scheme_host_port)) {
  cli_->set_keep_alive(o_.keep_alive);
  // Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm holds
  // the body until the server's delayed ACK (~40 ms on Linux) and that lands in every TTFT.
  cli_->set_tcp_nodelay(true);
  set_timeouts(*cli_, o_);
}

RequestClient::~RequestClient() = default;

double RequestClient::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - o_.t0).count();
}

RequestResult RequestClient::send(const PlannedRequest& p, const std::string& prompt) {
  RequestResult r;
  r.plan = p;
  const bool stream = o_.body.stream;
  ResponseReader reader(o_.endpoint, stream);
  SseParser sse([&](const SseEvent& ev) { reader.on_event(ev.data, now()); });
  std::string body;  // non-streaming body, or an error body
  bool event_stream = false;
  httplib::Headers resp_headers;

  httplib::Request req;
  req.method = "POST";
  req.path = o_.url.prefix + endpoint_path(o_.endpoint, stream);
  req.headers = headers_for(o_);
  req.headers.emplace("Content-Type", "application/json");
  if (stream) req.headers.emplace("Accept", "text/event-stream");
  req.body = request_body(o_.endpoint, o_.body, prompt, p);
  req.response_handler = [&](const httplib::Response& res) {
    r.http_status = res.status;
    resp_headers = res.headers;
    event_stream = res.status == 200 && stream &&
                   res.get_header_value("Content-Type").find("text/event-stream") == 0;
    return true;
  };
  req.content_receiver = [&](const char* data, std::size_t n, std::uint64_t, std::uint64_t) {
    if (event_stream)
      sse.feed(std::string_view(data, n));
    else
      body.append(data, n);
    return true;
  };

  r.send_s = now();
  httplib::Result res = cli_->send(req);
  r.end_s = now();
  if (!res) {
    r.error = "no answer from " + o_.url.scheme_host_port + ": " + httplib::to_string(res.error());
    return r;
  }
  r.http_status = res->status;
  if (res->status != 200) {
    ResponseReader err(o_.endpoint, false);
    err.on_body(body);
    r.error =
        fmt::format("HTTP {}: {}", res->status, err.error().empty() ? shorten(body) : err.error());
    return r;
  }
  if (event_stream) {
    sse.finish();
    r.first_token_s = reader.first_token_s();
    r.itl_s = reader.itl_s();
  } else {
    reader.on_body(body);
  }
  if (!reader.error().empty()) {
    r.error = reader.error();
    return r;
  }
  const bool complete =
      o_.endpoint == Endpoint::kTgi || !event_stream ? reader.finished() : reader.done_marker();
  if (!complete) {
    r.error = "the answer ended early (no " +
              std::string(o_.endpoint == Endpoint::kTgi || !event_stream ? "final event"
                                                                         : "data: [DONE]") +
              ")";
    return r;
  }
  r.usage_reported = reader.usage_output_tokens() >= 0;
  r.output_tokens = r.usage_reported ? reader.usage_output_tokens()
                    : event_stream   ? reader.token_events()
                                     : p.output_tokens;
  r.prompt_tokens =
      reader.usage_prompt_tokens() >= 0 ? reader.usage_prompt_tokens() : p.prompt_tokens;
  if (auto it = resp_headers.find("x-prompt-tokens"); it != resp_headers.end())
    if (reader.usage_prompt_tokens() < 0) r.prompt_tokens = std::atoi(it->second.c_str());
  r.server = reader.server();
  if (!r.server.has_ttft)
    r.server.ttft_s = header_double(resp_headers, "x-prima-sim-ttft-s", &r.server.has_ttft);
  if (!r.server.has_e2e)
    r.server.e2e_s = header_double(resp_headers, "x-prima-sim-e2e-s", &r.server.has_e2e);
  if (!r.server.has_queue)
    r.server.queue_s = header_double(resp_headers, "x-prima-sim-queue-s", &r.server.has_queue);
  r.ok = true;
  return r;
}

Result<std::string> fetch_model_name(const ClientOptions& o) {
  httplib::Client c(o.url.scheme_host_port);
  set_timeouts(c, o);
  auto res = c.Get(o.url.prefix + "/v1/models", headers_for(o));
  if (!res)
    return unavailable("cannot reach " + o.url.scheme_host_port + " (GET /v1/models: " +
                       httplib::to_string(res.error()) + "); is the server running?");
  if (res->status != 200)
    return unavailable(fmt::format("GET {}/v1/models: HTTP {}: {}", o.url.scheme_host_port,
                                   res->status, shorten(res->body)));
  auto j = config::parse_json(res->body, nullptr)
               .value_or(nlohmann::json(nlohmann::json::value_t::discarded));
  if (j.is_object())
    if (auto d = j.find("data"); d != j.end() && d->is_array() && !d->empty())
      if (auto id = (*d)[0].find("id"); id != (*d)[0].end() && id->is_string())
        return id->get<std::string>();
  return unavailable("GET /v1/models: no model id in the answer (give --model)");
}

}  // namespace prima::loadgen
