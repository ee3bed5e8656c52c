// The HTTP APIs a benchmark can drive and how to talk to them, without any network code:
// the request path and JSON body for each endpoint (OpenAI completions and chat, TGI), and a
// ResponseReader that turns a response (a JSON body, or server-sent events one by one) into
// tokens, usage and the server's own timings.
//
//   completions: POST /v1/completions        {"model","prompt","max_tokens","stream",...}
//   chat:        POST /v1/chat/completions   {"model","messages":[{"role":"user",...}],...}
//   tgi:         POST /generate[_stream]     {"inputs","parameters":{"max_new_tokens",...}}
//
// Plain functions and a per-response ResponseReader (single-threaded, one per response).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "loadgen/record.h"

namespace prima::loadgen {

enum class Endpoint { kCompletions, kChat, kTgi };

// "completions" | "chat" | "tgi" (also "generate"); false if unknown.
bool parse_endpoint(std::string_view s, Endpoint* out);
const char* endpoint_name(Endpoint e);
std::string endpoint_path(Endpoint e, bool stream);

struct BodyOptions {
  std::string model;  // not sent to TGI
  bool stream = true;
  bool ignore_eos = false;  // OpenAI "ignore_eos" (vLLM's extension), for exact output lengths
  // Fields merged into every request: at the top level for OpenAI, into "parameters" for TGI
  // (sampling: "temperature", "top_p", "top_k", ...). Must be an object (or null: none). Its
  // fields win over the benchmark's own.
  nlohmann::json extra = nullptr;
};

// The JSON body for one request: `prompt` as text (a chat prompt becomes one user message).
std::string request_body(Endpoint e, const BodyOptions& o, const std::string& prompt,
                         const PlannedRequest& p);

// Reads one response. Streaming: feed each SSE event's data (in order) with its arrival time;
// non-streaming: give the whole body. Then read the result fields.
class ResponseReader {
 public:
  ResponseReader(Endpoint e, bool stream) : endpoint_(e), stream_(stream) {}

  // One event's data ("[DONE]" ends an OpenAI stream). `t_s`: when it arrived.
  void on_event(const std::string& data, double t_s);
  // A complete non-streaming body.
  void on_body(const std::string& body);

  // Streaming: token-carrying events seen, when the first arrived, and gaps between them.
  int token_events() const { return token_events_; }
  double first_token_s() const { return first_token_s_; }
  const std::vector<double>& itl_s() const { return itl_s_; }
  bool done_marker() const { return done_; }   // OpenAI "[DONE]" seen
  bool finished() const { return finished_; }  // a finish_reason / last TGI event seen
  // The server's usage (OpenAI usage, TGI details.generated_tokens); -1 when not given.
  int usage_output_tokens() const { return usage_out_; }
  int usage_prompt_tokens() const { return usage_in_; }
  const ServerTimings& server() const { return server_; }
  // An error the server sent in the body or a stream event ("" = none).
  const std::string& error() const { return error_; }

 private:
  void token_at(double t_s);
  Endpoint endpoint_;
  bool stream_;
  int token_events_ = 0;
  double first_token_s_ = -1, last_token_s_ = -1;
  std::vector<double> itl_s_;
  bool done_ = false, finished_ = false;
  int usage_out_ = -1, usage_in_ = -1;
  ServerTimings server_;
  std::string error_;
};

// Reads prima serve's "prima" timing object ({"ttft_s","e2e_s","queue_s"}) into `t`.
void read_prima_timings(const std::string& json_object_text, ServerTimings* t);

}  // namespace prima::loadgen
