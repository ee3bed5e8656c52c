// Log-probabilities in the OpenAI and TGI shapes (see logprobs_json.h).
#include "server/logprobs_json.h"

#include <algorithm>

#include "server/text_decoder.h"

namespace prima::server {

using nlohmann::json;

std::size_t utf8_length(std::string_view s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

json completion_logprobs(const std::vector<StreamToken>& toks, std::size_t* offset) {
  json tokens = json::array(), lps = json::array(), tops = json::array(), offs = json::array();
  for (const auto& t : toks) {
    const std::string tok = valid_utf8(t.piece);
    tokens.push_back(tok);
    offs.push_back(*offset);
    *offset += utf8_length(tok);
    if (!t.has_logprob) {  // a prompt's first token: no context, no log-probability
      lps.push_back(nullptr);
      tops.push_back(nullptr);
      continue;
    }
    lps.push_back(t.logprob);
    json top = json::object();
    for (const auto& a : t.top) {
      const std::string k = valid_utf8(a.piece);
      if (!top.contains(k)) top[k] = a.logprob;
    }
    if (!top.contains(tok)) top[tok] = t.logprob;  // the sampled token is always listed
    tops.push_back(std::move(top));
  }
  return {
      {"tokens", tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", offs}};
}

namespace {

json bytes_of(const std::string& piece) {
  json b = json::array();
  for (unsigned char c : piece) b.push_back(static_cast<int>(c));
  return b;
}

}  // namespace

json chat_logprobs(const std::vector<StreamToken>& toks) {
  json content = json::array();
  for (const auto& t : toks) {
    json top = json::array();
    for (const auto& a : t.top)
      top.push_back(
          {{"token", valid_utf8(a.piece)}, {"logprob", a.logprob}, {"bytes", bytes_of(a.piece)}});
    content.push_back({{"token", valid_utf8(t.piece)},
                       {"logprob", t.logprob},
                       {"bytes", bytes_of(t.piece)},
                       {"top_logprobs", std::move(top)}});
  }
  return {{"content", std::move(content)}, {"refusal", nullptr}};
}

void synthetic_prompt_pieces(const std::string& text, std::vector<StreamToken>* prompt) {
  // A prompt truncated to its last n tokens (TGI's truncate) keeps the last n cuts.
  const std::size_t n = prompt->size(), cuts = std::max<std::size_t>(1, (text.size() + 3) / 4);
  const std::size_t first = cuts > n ? cuts - n : 0;
  for (std::size_t k = 0; k < n; ++k) {
    // The last token takes the rest: the pieces always spell the (kept) prompt.
    const std::size_t from = std::min(text.size(), (first + k) * 4);
    (*prompt)[k].piece = k + 1 == n ? text.substr(from) : text.substr(from, 4);
    (*prompt)[k].id = static_cast<int>(first + k);
  }
}

int tgi_token_id(const StreamToken& t) {
  return t.id >= 0 ? t.id : t.index % 32;
}

json tgi_token(const StreamToken& t, const std::string& text) {
  return {{"id", tgi_token_id(t)},
          {"text", valid_utf8(text)},
          {"logprob", t.logprob},
          {"special", t.special}};
}

json tgi_top_tokens(const StreamToken& t) {
  json out = json::array();
  for (const auto& a : t.top)
    out.push_back(
        {{"id", a.id}, {"text", valid_utf8(a.piece)}, {"logprob", a.logprob}, {"special", false}});
  return out;
}

}  // namespace prima::server
