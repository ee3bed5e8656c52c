// Fields implemented or refused (see request_fields.h).
#include "server/request_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "server/text_codec.h"

namespace prima::server {
namespace {

using config::JsonReader;
using nlohmann::json;

// An optional integer in [lo, hi].
std::optional<std::int64_t> integer_in(const JsonReader& r, const char* key, std::int64_t lo,
                                       std::int64_t hi) {
  const auto v = r.optional_integer(key);
  if (v && (*v < lo || *v > hi))
    r.fail(key, fmt::format("must be an integer from {} to {}, got {}", lo, hi, *v));
  return v;
}

const std::set<std::string>& openai_known(ApiKind kind) {
  // Implemented or validated (request_parse.cpp, this file), or accepted as what they are:
  // "user" (an end-user id for abuse monitoring: nothing to do with the output).
  static const std::set<std::string> common = {"model",
                                               "max_tokens",
                                               "temperature",
                                               "top_p",
                                               "top_k",
                                               "n",
                                               "stream",
                                               "stream_options",
                                               "stop",
                                               "seed",
                                               "ignore_eos",
                                               "presence_penalty",
                                               "frequency_penalty",
                                               "repetition_penalty",
                                               "logit_bias",
                                               "logprobs",
                                               "user",
                                               "priority",
                                               "sla",
                                               "metadata",
                                               "min_p",
                                               "min_tokens",
                                               "stop_token_ids",
                                               "skip_special_tokens",
                                               "include_stop_str_in_output",
                                               "store",
                                               "echo"};
  static const std::set<std::string> completion = [] {
    auto s = common;
    s.insert({"prompt", "best_of", "suffix"});
    return s;
  }();
  static const std::set<std::string> chat = [] {
    auto s = common;
    s.insert({"messages", "max_completion_tokens", "top_logprobs", "response_format", "tools",
              "tool_choice", "functions", "function_call", "parallel_tool_calls",
              "chat_template_kwargs", "add_generation_prompt", "continue_final_message"});
    return s;
  }();
  return kind == ApiKind::kChat ? chat : completion;
}

}  // namespace

void refuse_unknown_fields(const JsonReader& r, const std::set<std::string>& known) {
  for (const auto& [key, v] : r.json().items()) {
    if (known.count(key)) continue;
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    r.fail(key, fmt::format("is not a field this server implements (see docs/serving.md); "
                            "accepted: {}",
                            list));
  }
}

namespace {

// best_of: this server generates one sequence per request.
void refuse_best_of(const JsonReader& r, const char* why) {
  if (const auto b = r.optional_integer("best_of"); b && *b != 1)
    r.fail("best_of", fmt::format("must be 1 ({}), got {}", why, *b));
}

void check_openai(ApiKind kind, const JsonReader& r) {
  refuse_unknown_fields(r, openai_known(kind));
  const json& j = r.json();
  // No tool-calling template for the served model: tools cannot be offered to it.
  for (const char* f : {"tools", "functions"})
    if (r.has(f) && !(j.at(f).is_array() && j.at(f).empty()))
      r.fail(f, "is not supported: the served model has no tool-calling template; send no tools");
  for (const char* f : {"tool_choice", "function_call"})
    if (r.has(f) && !(j.at(f).is_string() && j.at(f).get<std::string>() == "none"))
      r.fail(f, "is not supported (no tool calling): omit it or send \"none\"");
  r.boolean("parallel_tool_calls", false);
  if (r.has("response_format")) {
    const json& rf = j.at("response_format");
    if (!rf.is_object() || !rf.contains("type") || rf.at("type") != "text")
      r.fail("response_format",
             "must be {\"type\": \"text\"}: JSON mode and JSON schemas need constrained "
             "decoding, which this server does not do");
  }
  refuse_best_of(r, "this server returns the one sequence it generates");
  if (r.boolean("store", false))
    r.fail("store",
           "is not supported: this server does not store completions; send false or "
           "omit it");
  if (!r.string("suffix", "").empty())
    r.fail("suffix",
           "is not supported (the served model has no fill-in-the-middle template): omit it or "
           "send \"\"");
  r.string("user", "");
}

void check_tgi(const JsonReader& r) {
  static const std::set<std::string> top = {"inputs",   "parameters", "stream",
                                            "priority", "sla",        "metadata"};
  static const std::set<std::string> params = {"max_new_tokens",
                                               "temperature",
                                               "top_p",
                                               "top_k",
                                               "seed",
                                               "stop",
                                               "do_sample",
                                               "ignore_eos",
                                               "details",
                                               "decoder_input_details",
                                               "top_n_tokens",
                                               "return_full_text",
                                               "truncate",
                                               "repetition_penalty",
                                               "frequency_penalty",
                                               "best_of",
                                               "watermark",
                                               "typical_p",
                                               "grammar",
                                               "adapter_id",
                                               "priority",
                                               "sla"};
  refuse_unknown_fields(r, top);
  r.boolean("stream", false);
  if (!r.has("parameters") || !r.json().at("parameters").is_object())
    return;  // its type: request_parse.cpp
  const JsonReader p = r.object("parameters");
  refuse_unknown_fields(p, params);
  refuse_best_of(p, "this server generates one sequence per request");
  if (p.boolean("watermark", false))
    p.fail("watermark", "is not implemented: send false or omit it");
  const std::pair<const char*, const char*> refused[] = {
      {"grammar", "constrained decoding (JSON / regex grammars) is not implemented: omit it"},
      {"adapter_id", "LoRA adapters are not served: omit it"},
  };
  for (const auto& [field, why] : refused)
    if (p.has(field)) p.fail(field, fmt::format("is refused: {}", why));
}

// The prompt of a completions body as text (echo): the string, or the ids' pieces.
std::string prompt_text_of(const json& prompt, const GenRequest& g, const ModelInfo& m) {
  const json* p = &prompt;
  if (p->is_array() && p->size() == 1 && (*p)[0].is_string()) p = &(*p)[0];
  if (p->is_string()) return p->get<std::string>();
  std::string s;
  // piece(index, id) of the real codec reads the id; the synthetic one reads the index.
  for (int id : g.prompt_ids) s += codec_of(m).piece(id, id);
  return s;
}

// The keys of logit_bias: token ids written as strings, in the vocabulary.
int logit_bias_id(const JsonReader& lb, const std::string& key, int vocab) {
  long long id = -1;
  std::size_t used = 0;
  try {
    id = std::stoll(key, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != key.size() || key.empty() || id < 0 || id > (1 << 30))
    lb.fail(key, fmt::format("is not a token id: the keys of '{}' must be token ids (integers >= "
                             "0 written as strings)",
                             lb.path()));
  if (vocab > 0 && id >= vocab)
    lb.fail(key, fmt::format("is not a token id of this model (0..{})", vocab - 1));
  return static_cast<int>(id);
}

}  // namespace

void check_fields(ApiKind kind, const JsonReader& body) {
  switch (kind) {
    case ApiKind::kCompletion:
    case ApiKind::kChat:
      return check_openai(kind, body);
    case ApiKind::kTgi:
      return check_tgi(body);
    case ApiKind::kKServe:
    case ApiKind::kResponses:  // its own list (request_parse.cpp)
      break;
  }
}

void parse_penalty_fields(const JsonReader& r, const ModelInfo& m, GenRequest* g) {
  SamplingParams& sp = g->sampling;
  for (const char* f : {"presence_penalty", "frequency_penalty"}) {
    const auto v = r.optional_number(f);
    if (!v) continue;
    if (!(*v >= -2 && *v <= 2)) r.fail(f, fmt::format("must be between -2 and 2, got {}", *v));
    (std::string(f) == "presence_penalty" ? sp.presence_penalty : sp.frequency_penalty) = *v;
  }
  if (const auto v = r.optional_number("repetition_penalty")) {
    if (!(*v > 0 && *v <= 100))
      r.fail("repetition_penalty",
             fmt::format("must be > 0 and <= 100 (1: no penalty), got {}", *v));
    sp.repetition_penalty = *v;
  }
  if (!r.has("logit_bias")) return;
  const json& v = r.json().at("logit_bias");
  if (!v.is_object())
    r.fail_type("logit_bias", "an object mapping token ids (as strings) to biases", v);
  if (v.size() > 300)
    r.fail("logit_bias", fmt::format("holds at most 300 tokens, got {}", v.size()));
  const JsonReader lb = r.object("logit_bias");
  const int vocab = codec_of(m).vocab_size();
  for (const auto& [key, bias] : v.items()) {
    const int id = logit_bias_id(lb, key, vocab);
    const double b = lb.number(key);
    if (!(b >= -100 && b <= 100))
      lb.fail(key, fmt::format("must be between -100 and 100, got {}", b));
    sp.logit_bias.emplace_back(id, static_cast<float>(b));
  }
  std::sort(sp.logit_bias.begin(), sp.logit_bias.end());
}

std::optional<std::string> served_name(const ModelInfo& m, const std::string& asked) {
  if (asked == m.name || std::find(m.aliases.begin(), m.aliases.end(), asked) != m.aliases.end())
    return asked;
  if (asked == "tgi" || asked == "dummy") return m.name;
  return std::nullopt;
}

// vLLM's extra sampling fields: min_p, min_tokens, stop_token_ids, skip_special_tokens,
// include_stop_str_in_output.
void parse_vllm_extras(const JsonReader& r, const ModelInfo& m, GenRequest* g) {
  if (const auto v = r.optional_number("min_p")) {
    if (!(*v >= 0 && *v <= 1)) r.fail("min_p", fmt::format("must be between 0 and 1, got {}", *v));
    g->sampling.min_p = *v;
  }
  g->min_tokens = static_cast<int>(integer_in(r, "min_tokens", 0, 1 << 30).value_or(0));
  if (r.has("stop_token_ids") && !r.json().at("stop_token_ids").is_null()) {
    const json& v = r.json().at("stop_token_ids");
    if (!v.is_array()) r.fail_type("stop_token_ids", "a list of token ids", v);
    if (v.size() > 64)
      r.fail("stop_token_ids", fmt::format("holds at most 64 ids, got {}", v.size()));
    const int vocab = codec_of(m).vocab_size();
    for (std::size_t i = 0; i < v.size(); ++i) {
      if (!v[i].is_number_integer() || v[i].get<long long>() < 0 ||
          v[i].get<long long>() > (1 << 30))
        r.fail("stop_token_ids", i,
               fmt::format("must be a token id (an integer >= 0), got {}", config::brief(v[i])));
      if (vocab > 0 && v[i].get<long long>() >= vocab)
        r.fail("stop_token_ids", i,
               fmt::format("{} is not a token id of this model (0..{})", v[i].dump(), vocab - 1));
      g->stop_token_ids.push_back(v[i].get<int>());
    }
  }
  g->skip_special_tokens = r.boolean("skip_special_tokens", g->skip_special_tokens);
  g->include_stop_str = r.boolean("include_stop_str_in_output", g->include_stop_str);
}

void parse_openai_fields(ApiKind kind, const JsonReader& r, const ModelInfo& m,
                         ParsedRequest* out) {
  GenRequest& g = out->gen;
  parse_penalty_fields(r, m, &g);
  parse_vllm_extras(r, m, &g);
  if (kind == ApiKind::kCompletion) {
    if (r.has("logprobs") && r.json().at("logprobs").is_boolean())
      r.fail_type("logprobs", "an integer from 0 to 5 (completions)", r.json().at("logprobs"));
    const auto lp = integer_in(r, "logprobs", 0, 5);
    if (lp) g.sampling.logprobs = static_cast<int>(*lp);
    out->echo = r.boolean("echo", out->echo);
    // echo with logprobs: the prompt's tokens are scored too (OpenAI's legacy shape).
    if (out->echo && lp) g.sampling.prompt_logprobs = static_cast<int>(*lp);
    if (out->echo && r.json().contains("prompt"))
      out->prompt_text = prompt_text_of(r.json().at("prompt"), g, m);
    return;
  }
  const bool want = r.boolean("logprobs", false);
  const auto top = integer_in(r, "top_logprobs", 0, SamplingParams::kMaxTopLogprobs);
  if (top && !want) r.fail("top_logprobs", "needs 'logprobs': true");
  if (want) g.sampling.logprobs = static_cast<int>(top.value_or(0));
}

void parse_tgi_fields(const JsonReader& p, const ModelInfo& m, ParsedRequest* out) {
  GenRequest& g = out->gen;
  parse_penalty_fields(p, m, &g);
  out->details = p.boolean("details", out->details);
  out->decoder_input_details = p.boolean("decoder_input_details", out->decoder_input_details);
  // details.prefill carries each prompt token's logprob (the first's is null).
  if (out->decoder_input_details) g.sampling.prompt_logprobs = 0;
  // TGI keeps the stop sequence that ended the text in generated_text (as in details.tokens).
  g.include_stop_str = true;
  out->return_full_text = p.boolean("return_full_text", out->return_full_text);
  out->top_n_tokens = static_cast<int>(
      integer_in(p, "top_n_tokens", 0, SamplingParams::kMaxTopLogprobs).value_or(0));
  // TGI reports every generated token's logprob (the stream's tokens, details.tokens).
  g.sampling.logprobs = out->top_n_tokens;
  if (const auto typical = p.optional_number("typical_p")) {
    if (!(*typical > 0 && *typical <= 1))
      p.fail("typical_p", fmt::format("must be > 0 and <= 1 (1: off), got {}", *typical));
    g.sampling.typical_p = *typical;
    // A sampling field: TGI samples when one is given (at temperature 1 unless set).
    if (g.sampling.temperature == 0 && !p.has("temperature")) g.sampling.temperature = 1.0;
  }
  const auto truncate = integer_in(p, "truncate", 1, 1ll << 30);
  if (truncate && g.prompt_tokens > *truncate) {
    const int keep = static_cast<int>(*truncate);
    if (!g.prompt_ids.empty()) g.prompt_ids.erase(g.prompt_ids.begin(), g.prompt_ids.end() - keep);
    g.prompt_tokens = keep;
  }
}

}  // namespace prima::server
