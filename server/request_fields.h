// The request fields beyond prompt, lengths and the basic sampling knobs (request_parse.h):
// each is implemented or refused with a 400 naming it, never silently ignored
// (docs/serving.md, "Fields per API").
//  - check_fields(): a body's keys (OpenAI: the top level; TGI: the top level and
//    "parameters") are either implemented, accepted for what they are, or refused: tools,
//    tool_choice, functions, response_format other than {"type": "text"}, best_of > 1, suffix,
//    grammar, watermark: true, adapter_id, and any field this server does not know.
//  - parse_openai_fields(): logprobs (completions: 0..5 alternatives; chat: a boolean, with
//    top_logprobs 0..20), echo (completions; not with logprobs: prompt logprobs are not
//    computed), presence_penalty / frequency_penalty (-2..2), repetition_penalty (> 0),
//    logit_bias ({"token id": -100..100}, ids in the vocabulary).
//  - parse_tgi_fields(): details, decoder_input_details, top_n_tokens (0..20),
//    return_full_text, truncate (keeps the last N prompt tokens), repetition_penalty,
//    frequency_penalty, typical_p (0 < p <= 1; a sampling field, like TGI's). TGI reports every
//    token's logprob, so its requests always ask for them.
//  - parse_penalty_fields(): the penalties and logit_bias alone (KServe's "parameters").
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "server/api_error.h"
#include "server/request_parse.h"

namespace prima::server {

std::optional<ApiError> check_fields(ApiKind kind, const nlohmann::json& body);

std::optional<ApiError> parse_openai_fields(ApiKind kind, const nlohmann::json& body,
                                            const ModelInfo& m, ParsedRequest* out);

// `params` is the TGI body's "parameters" object (or an empty object); call before the
// prompt length is checked (truncate shortens the prompt).
std::optional<ApiError> parse_tgi_fields(const nlohmann::json& params, const ModelInfo& m,
                                         ParsedRequest* out);

// presence_penalty, frequency_penalty, repetition_penalty and logit_bias in `j`; field paths
// start with `pre` ("" or "parameters.").
std::optional<ApiError> parse_penalty_fields(const nlohmann::json& j, const std::string& pre,
                                             const ModelInfo& m, GenRequest* g);

}  // namespace prima::server
