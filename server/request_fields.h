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
// Each reads its object with a request-body JsonReader (config::JsonReader::request_body) and
// throws config::ConfigError, naming the field (ConfigError::field()), for a field it refuses;
// the request parser turns that into a 400 (request_parse.cpp). Pure functions; thread-safe.
#pragma once

#include <set>
#include <string>

#include "engine/config/json_reader.h"
#include "server/request_parse.h"

namespace prima::server {

void check_fields(ApiKind kind, const config::JsonReader& body);

// Refuses (throws, naming the key) any key of `r`'s object outside `known`.
void refuse_unknown_fields(const config::JsonReader& r, const std::set<std::string>& known);

// A chat message's (or a Responses input item's) content: a string, null, or a list of
// parts of type `text_type` (or "text") with "text"; other part types (images, audio, files)
// are refused naming the type. request_parse.cpp.
std::string message_content(const config::JsonReader& msg, const char* text_type);
// A message's role: "system", "user" or "assistant" ("developer" reads as "system"); tool
// roles and anything else are refused. request_parse.cpp.
std::string chat_role(const config::JsonReader& msg);

void parse_openai_fields(ApiKind kind, const config::JsonReader& body, const ModelInfo& m,
                         ParsedRequest* out);

// `params` reads the TGI body's "parameters" object (or an empty object); call before the
// prompt length is checked (truncate shortens the prompt).
void parse_tgi_fields(const config::JsonReader& params, const ModelInfo& m, ParsedRequest* out);

// presence_penalty, frequency_penalty, repetition_penalty and logit_bias of `r`'s object.
void parse_penalty_fields(const config::JsonReader& r, const ModelInfo& m, GenRequest* g);

}  // namespace prima::server
