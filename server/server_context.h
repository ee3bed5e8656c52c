// ServerContext: what every API handler shares (the engine bridge, the guard, the served
// model and the parsing limits), and the steps common to every generation route: admit and
// submit a parsed request, turn an engine rejection or failure into an ApiError, and report
// a request's engine-time timings (x-prima-* headers, the "prima" JSON object).
// Request accounting: every API request that asks for work and is not answered with success is
// counted once in the metrics, by whoever knows why: admission (429, 503, counted here), the
// engine's hooks (a submitted request's end), or else the HTTP server's logger, by the
// answer's status (unparsable bodies, bad fields, unknown models, missing keys, 413s).
// Thread-safety: the context is immutable once serving starts; its members are thread-safe.
#pragma once

#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "server/api_error.h"
#include "server/engine_bridge.h"
#include "server/guard.h"
#include "server/metrics.h"
#include "server/request_parse.h"

namespace prima::server {

struct ServerContext {
  EngineBridge* bridge = nullptr;
  Guard* guard = nullptr;
  ModelInfo model;
  ParseLimits limits;
  std::string backend = "sim";
  ServerMetrics* metrics = nullptr;  // may be null (no /metrics)

  // Readiness (/v2/health/ready, /v2/models/{m}/ready): not draining, and some replica of
  // the engine serves (a replica whose steps failed is taken out of routing; when none is
  // left, a load balancer should send requests elsewhere).
  bool ready() const { return !guard->draining() && bridge->snapshot().serving(); }
};

struct Submitted {
  RequestId id = 0;
  std::shared_ptr<TokenStream> stream;
  Guard::Slot slot;  // held until the answer is written
};

// Admits (429 when full, 503 when draining) and submits; on refusal sends the error on `res`
// and returns nullopt. Either way the request is accounted for (refused: counted now;
// submitted: counted when it ends) and `res` is marked so (mark_accounted).
std::optional<Submitted> admit_and_submit(ServerContext& ctx, const ParsedRequest& p,
                                          httplib::Response& res, ErrorStyle style);

// Marks `res` as the answer of a request the metrics already count; the HTTP server's logger,
// which runs after the handler on the same worker thread, asks take_accounted() and counts
// the error answers that are not marked by their status. Handler threads only.
void mark_accounted(const httplib::Response& res);
// Whether `res` was marked on this thread (and clears the mark).
bool take_accounted(const httplib::Response& res);

// Waits for the end of a non-streaming request. Every 50 ms without an end it checks whether
// the client closed its connection (peer_closed on the handler thread's connection socket);
// if so it cancels the request (its KV blocks are freed; it ends as failed, "client
// disconnected", counted as cancelled) and returns that end. Handler threads only.
StreamEnd wait_for_end(ServerContext& ctx, const Submitted& sub, std::vector<StreamToken>* tokens);

// The error of a request the engine did not complete (nullopt when completed): rejected
// -> 400 (e.g. it can never fit the KV cache), failed -> 500.
std::optional<ApiError> end_error(const StreamEnd& e);

// Engine-time timings of a finished request: x-prima-sim-{ttft,e2e,queue}-s headers and the
// same as {"ttft_s", "e2e_s", "queue_s", "arrival_s"}.
void set_timing_headers(httplib::Response& res, const StreamEnd& e);
nlohmann::json timing_json(const StreamEnd& e);

// The prompt's tokens with their log-probabilities, for a request that scores its prompt
// (they come with its first output token, StreamToken::prompt): the model's pieces, or with
// the sim backend the prompt text cut as it counts tokens (synthetic_prompt_pieces). Empty
// when the request asked for none or got no token.
std::vector<StreamToken> scored_prompt(const ServerContext& ctx, const ParsedRequest& p,
                                       const std::vector<StreamToken>& toks);

// A response id unique across servers and restarts: `prefix` ("cmpl-", "resp_") and 32
// random hex digits.
std::string unique_id(const std::string& prefix);
// Sets the X-Request-Id header to `id` unless the client sent its own (echoed by the HTTP
// server before the handler ran).
void set_request_id(httplib::Response& res, const std::string& id);

// A finished request's output text: its tokens' texts and the tail held back at the end.
std::string output_text(const std::vector<StreamToken>& toks, const StreamEnd& e);

}  // namespace prima::server
