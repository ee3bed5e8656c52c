// ServerContext: what every API handler shares (the engine bridge, the guard, the served
// model and the parsing limits), and the steps common to every generation route: admit and
// submit a parsed request, turn an engine rejection or failure into an ApiError, and report
// a request's engine-time timings (x-prima-* headers, the "prima" JSON object).
// Thread-safety: the context is immutable once serving starts; its members are thread-safe.
#pragma once

#include <httplib.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "server/api_error.h"
#include "server/engine_bridge.h"
#include "server/guard.h"
#include "server/request_parse.h"

namespace prima::server {

struct ServerContext {
  EngineBridge* bridge = nullptr;
  Guard* guard = nullptr;
  ModelInfo model;
  ParseLimits limits;
  std::string backend = "sim";
};

struct Submitted {
  RequestId id = 0;
  std::shared_ptr<TokenStream> stream;
  Guard::Slot slot;  // held until the answer is written
};

// Admits (429 when full, 503 when draining) and submits; on refusal sends the error on `res`
// and returns nullopt.
std::optional<Submitted> admit_and_submit(ServerContext& ctx, const ParsedRequest& p,
                                          httplib::Response& res, ErrorStyle style);

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

// A finished request's output text: its tokens' texts and the tail held back at the end.
std::string output_text(const std::vector<StreamToken>& toks, const StreamEnd& e);

}  // namespace prima::server
