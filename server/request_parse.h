// Request parsing and validation for the three APIs: the JSON body becomes a GenRequest
// (prompt length, max tokens, priority, SLA) plus the API's options (stream, usage in the
// stream). Every error is an ApiError whose message names the field (JSON path) and what
// would be valid: invalid JSON, wrong types, missing keys, unknown model (404), prompt longer
// than the model's context, max_tokens out of range.
//
// Accepted everywhere: "priority" ("high" | "normal" | "low", or 0 | 1 | 2) and "sla" (a
// number of seconds or a string like "200ms", "1.5s", "2min"), at the top level or in
// "metadata". Fields are read with config::JsonReader (its request-body dialect), so every
// type error reads "'FIELD' must be X, got V".
// Sampling (used by the real backend, validated for both): "temperature" (0..100; 0 greedy),
// "top_p" (0 < p <= 1), "top_k" (>= 1; 0 or -1: off), "seed" (integer), "stop" (a string or
// a list of up to 16 non-empty strings), "ignore_eos" (boolean) — at the top level for
// OpenAI, in "parameters" for TGI and KServe. Defaults: OpenAI samples at temperature 1 (as
// OpenAI does); TGI is greedy unless "do_sample" is true or a sampling field is given;
// KServe is greedy unless "temperature" is given.
// Beyond these: request_fields.h (logprobs, echo, penalties, logit_bias, TGI details, and the
// fields refused).
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "server/api_error.h"
#include "server/engine_bridge.h"

namespace prima::server {

class TextCodec;

struct ModelInfo {
  std::string name;                  // the served model's name (the "model" field must match it)
  std::vector<std::string> aliases;  // more names it answers to (--served-model-name)
  int max_model_len = 0;             // prompt + output tokens at most
  std::int64_t created = 0;          // unix time the server started
  const TextCodec* codec = nullptr;  // prompts -> tokens (borrowed; null: synthetic_codec())
};

struct ParseLimits {
  int default_max_tokens = 16;  // when the request does not say
  int max_tokens_cap = 0;       // largest max_tokens accepted (0: the model's context)
};

struct ParsedRequest {
  std::string model;
  GenRequest gen;
  bool stream = false;
  bool include_usage = false;     // OpenAI stream_options.include_usage
  bool continuous_usage = false;  // stream_options.continuous_usage_stats: usage in every chunk
  // Completions with max_tokens 0 (scoring): the engine runs the prompt and samples one token,
  // which the answer leaves out (no completion tokens).
  bool score_only = false;
  // Output options (request_fields.h). Log-probabilities are gen.sampling.logprobs.
  bool echo = false;                   // OpenAI completions: the prompt precedes the text
  bool details = false;                // TGI: "details" in the response
  bool decoder_input_details = false;  // TGI: details.prefill lists the prompt's tokens
  int top_n_tokens = 0;                // TGI: alternatives per token
  bool return_full_text = false;       // TGI: the prompt precedes generated_text
  std::string prompt_text;             // the prompt as text (echo, TGI)
  std::string chat_echo;  // chat "echo": the final assistant message the answer continues
};

// The name an answer reports for a request's "model" `asked`: `asked` itself when the model
// is served under it (its name or an alias), the model's name for a placeholder that Text
// Generation Inference's clients send for "the model this server has" ("tgi", "dummy": TGI
// serves one model and ignores the name), nullopt for any other name.
std::optional<std::string> served_name(const ModelInfo& m, const std::string& asked);

// kResponses: OpenAI's Responses API (POST /v1/responses, text only).
enum class ApiKind { kCompletion, kChat, kTgi, kKServe, kResponses };

// Parses and validates `body` for `kind`. For kTgi the caller sets `stream` from the route;
// for kKServe `model` is the model in the path.
std::optional<ApiError> parse_request(ApiKind kind, const std::string& body, const ModelInfo& m,
                                      const ParseLimits& lim, ParsedRequest* out);

// The chat "messages" of `body` (an object), validated as for /v1/chat/completions and
// encoded with the model's codec into g->prompt_tokens (and g->prompt_ids): vLLM's /tokenize.
std::optional<ApiError> encode_chat_messages(const nlohmann::json& body, const ModelInfo& m,
                                             GenRequest* g);

// The body as JSON, or a discarded value when it does not parse (never throws).
nlohmann::json parse_or_null(const std::string& body);

}  // namespace prima::server
