// Per-token log-probabilities and token details in each API's JSON shapes, from the
// StreamTokens of a request (filled by EngineBridge when the request asks for them):
//  - OpenAI completions: {"tokens", "token_logprobs", "top_logprobs" (one {token: logprob}
//    object per position: the most likely tokens plus the sampled one, as OpenAI's legacy
//    API), "text_offset" (characters into the choice's text, the echoed prompt included); a
//    token without a log-probability (a scored prompt's first) has null for both};
//  - OpenAI chat: {"content": [{"token", "logprob", "bytes", "top_logprobs": [{"token",
//    "logprob", "bytes"}]}], "refusal": null};
//  - TGI: Token {"id", "text", "logprob", "special"}, and a position's top tokens as Tokens.
// Token strings are the token's bytes made valid UTF-8 (a byte that is part of a character
// split across tokens becomes U+FFFD; chat's "bytes" keeps the exact bytes).
// Pure functions; thread-safe.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "server/text_decoder.h"  // valid_utf8
#include "server/token_stream.h"

namespace prima::server {

// Characters (code points) in valid UTF-8 text.
std::size_t utf8_length(std::string_view s);

// OpenAI completions logprobs for `toks`; *offset: the text_offset of the first token,
// advanced past them (so consecutive stream chunks continue where the last one ended).
nlohmann::json completion_logprobs(const std::vector<StreamToken>& toks, std::size_t* offset);
nlohmann::json chat_logprobs(const std::vector<StreamToken>& toks);

// The sim backend's prompt tokens (SyntheticCodec: 4 bytes a token) as pieces of the prompt's
// text, so that an echoed prompt's tokens spell it (their values stay synthetic).
void synthetic_prompt_pieces(const std::string& text, std::vector<StreamToken>* prompt);

// TGI: the id shown for a token (the sim backend's synthetic word index when it has none).
int tgi_token_id(const StreamToken& t);
nlohmann::json tgi_token(const StreamToken& t, const std::string& text);
nlohmann::json tgi_top_tokens(const StreamToken& t);

}  // namespace prima::server
