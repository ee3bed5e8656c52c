// The steps shared by every generation route (see server_context.h).
#include "server/server_context.h"

#include <fmt/format.h>

#include <random>

#include "server/connection.h"
#include "server/logprobs_json.h"
#include "server/text_codec.h"

namespace prima::server {
namespace {

// The answer of the request this worker thread is handling, once accounted for. Cleared by
// the logger (take_accounted) and when the next request is routed (HttpServer's pre-routing).
thread_local const httplib::Response* accounted_response = nullptr;

}  // namespace

void mark_accounted(const httplib::Response& res) {
  accounted_response = &res;
}

bool take_accounted(const httplib::Response& res) {
  const bool marked = accounted_response == &res;
  accounted_response = nullptr;
  return marked;
}

std::optional<Submitted> admit_and_submit(ServerContext& ctx, const ParsedRequest& p,
                                          httplib::Response& res, ErrorStyle style) {
  ApiError why;
  Submitted s;
  s.slot = ctx.guard->admit(&why);
  mark_accounted(res);
  if (!s.slot) {
    if (ctx.metrics)
      ctx.metrics->on_refused(why.status == 429 ? Rejection::kCapacity : Rejection::kDraining,
                              p.gen.priority);
    send_error(res, why, style);
    return std::nullopt;
  }
  s.stream = ctx.bridge->submit(p.gen, &s.id);
  return s;
}

StreamEnd wait_for_end(ServerContext& ctx, const Submitted& sub, std::vector<StreamToken>* tokens) {
  const socket_t sock = current_connection_socket();
  bool cancelled = false;
  for (;;) {
    if (auto e = sub.stream->wait_end_for(tokens, std::chrono::milliseconds(50))) return *e;
    if (!cancelled && peer_closed(sock)) {
      ctx.bridge->cancel(sub.id, "client disconnected");
      cancelled = true;  // the engine ends it; wait for that end (its slot is held until then)
    }
  }
}

std::optional<ApiError> end_error(const StreamEnd& e) {
  if (e.outcome == Outcome::kCompleted) return std::nullopt;
  ApiError err;
  if (e.outcome == Outcome::kRejected) {
    err.status = 400;
    err.message = "the engine rejected the request: " + e.reason;
  } else {
    err.status = 500;
    err.type = "internal_error";
    err.message = "the request failed: " + e.reason;
  }
  return err;
}

void set_timing_headers(httplib::Response& res, const StreamEnd& e) {
  res.set_header("x-prima-sim-ttft-s", fmt::format("{:.9f}", e.ttft_s()));
  res.set_header("x-prima-sim-e2e-s", fmt::format("{:.9f}", e.e2e_s()));
  res.set_header("x-prima-sim-queue-s", fmt::format("{:.9f}", e.queue_s()));
}

nlohmann::json timing_json(const StreamEnd& e) {
  return {{"ttft_s", e.ttft_s()},
          {"e2e_s", e.e2e_s()},
          {"queue_s", e.queue_s()},
          {"arrival_s", e.arrival_s}};
}

std::vector<StreamToken> scored_prompt(const ServerContext& ctx, const ParsedRequest& p,
                                       const std::vector<StreamToken>& toks) {
  if (toks.empty() || p.gen.sampling.prompt_logprobs < 0) return {};
  std::vector<StreamToken> prompt = toks.front().prompt;
  if (!codec_of(ctx.model).real()) synthetic_prompt_pieces(p.prompt_text, &prompt);
  return prompt;
}

std::string unique_id(const std::string& prefix) {
  thread_local std::mt19937_64 gen = [] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }();
  return fmt::format("{}{:016x}{:016x}", prefix, gen(), gen());
}

void set_request_id(httplib::Response& res, const std::string& id) {
  if (!res.has_header("X-Request-Id")) res.set_header("X-Request-Id", id);
}

std::string output_text(const std::vector<StreamToken>& toks, const StreamEnd& e) {
  std::string s;
  for (const auto& t : toks) s += t.text;
  return s + e.tail_text;
}

}  // namespace prima::server
