// Fields implemented or refused (see request_fields.h).
#include "server/request_fields.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "server/text_codec.h"

namespace prima::server {
namespace {

using nlohmann::json;

const TextCodec& codec_of(const ModelInfo& m) {
  return m.codec ? *m.codec : synthetic_codec();
}

std::optional<ApiError> wrong_type(const std::string& path, const char* want, const json& v) {
  return bad_field(path, fmt::format("'{}' must be {}, got {}", path, want, v.type_name()));
}

bool present(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && !it->is_null();
}

// An integer (16.0 counts); nullopt and *err set when it is not one.
std::optional<long long> as_int(const json& v, const std::string& path,
                                std::optional<ApiError>* err) {
  if (v.is_number_integer() &&
      !(v.is_number_unsigned() && v.get<unsigned long long>() > (1ull << 62)))
    return v.get<long long>();
  if (v.is_number_float()) {
    const double d = v.get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 1e15)
      return static_cast<long long>(d);
  }
  *err = wrong_type(path, "an integer", v);
  return std::nullopt;
}

std::optional<ApiError> get_bool(const json& j, const char* key, const std::string& path,
                                 bool* out) {
  if (!present(j, key)) return std::nullopt;
  const json& v = j.at(key);
  if (!v.is_boolean()) return wrong_type(path, "a boolean", v);
  *out = v.get<bool>();
  return std::nullopt;
}

// An optional integer in [lo, hi].
std::optional<ApiError> get_int_in(const json& j, const char* key, const std::string& path,
                                   long long lo, long long hi, std::optional<long long>* out) {
  if (!present(j, key)) return std::nullopt;
  std::optional<ApiError> err;
  auto v = as_int(j.at(key), path, &err);
  if (err) return err;
  if (*v < lo || *v > hi)
    return bad_field(
        path, fmt::format("'{}' must be an integer from {} to {}, got {}", path, lo, hi, *v));
  *out = v;
  return std::nullopt;
}

std::optional<ApiError> get_number(const json& j, const char* key, const std::string& path,
                                   std::optional<double>* out) {
  if (!present(j, key)) return std::nullopt;
  const json& v = j.at(key);
  if (!v.is_number()) return wrong_type(path, "a number", v);
  *out = v.get<double>();
  return std::nullopt;
}

// Fields refused whatever their value unless it is the harmless one (null, absent, or the
// value named): a 400 saying why and what would be valid.
struct Refusal {
  const char* field;
  const char* why;
};

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
                                               "metadata"};
  static const std::set<std::string> completion = [] {
    auto s = common;
    s.insert({"prompt", "echo", "best_of", "suffix"});
    return s;
  }();
  static const std::set<std::string> chat = [] {
    auto s = common;
    s.insert({"messages", "max_completion_tokens", "top_logprobs", "response_format", "tools",
              "tool_choice", "functions", "function_call", "parallel_tool_calls"});
    return s;
  }();
  return kind == ApiKind::kChat ? chat : completion;
}

std::optional<ApiError> unknown_field(const std::string& path, const std::set<std::string>& known) {
  std::string list;
  for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
  return bad_field(path, fmt::format("'{}' is not a field this server implements (see "
                                     "docs/serving.md); accepted: {}",
                                     path, list));
}

std::optional<ApiError> check_openai(ApiKind kind, const json& j) {
  const auto& known = openai_known(kind);
  for (const auto& [key, v] : j.items())
    if (!known.count(key)) return unknown_field(key, known);
  // No tool-calling template for the served model: tools cannot be offered to it.
  for (const char* f : {"tools", "functions"})
    if (present(j, f) && !(j.at(f).is_array() && j.at(f).empty()))
      return bad_field(f, fmt::format("'{}' is not supported: the served model has no "
                                      "tool-calling template; send no tools",
                                      f));
  for (const char* f : {"tool_choice", "function_call"})
    if (present(j, f) && !(j.at(f).is_string() && j.at(f).get<std::string>() == "none"))
      return bad_field(f, fmt::format("'{}' is not supported (no tool calling): omit it or send "
                                      "\"none\"",
                                      f));
  if (present(j, "parallel_tool_calls") && !j.at("parallel_tool_calls").is_boolean())
    return wrong_type("parallel_tool_calls", "a boolean", j.at("parallel_tool_calls"));
  if (present(j, "response_format")) {
    const json& rf = j.at("response_format");
    if (!rf.is_object() || !rf.contains("type") || rf.at("type") != "text")
      return bad_field("response_format",
                       "'response_format' must be {\"type\": \"text\"}: JSON mode and JSON "
                       "schemas need constrained decoding, which this server does not do");
  }
  if (present(j, "best_of")) {
    std::optional<ApiError> err;
    auto b = as_int(j.at("best_of"), "best_of", &err);
    if (err) return err;
    if (*b != 1)
      return bad_field("best_of", fmt::format("'best_of' must be 1 (this server returns the one "
                                              "sequence it generates), got {}",
                                              *b));
  }
  if (present(j, "suffix")) {
    const json& s = j.at("suffix");
    if (!s.is_string()) return wrong_type("suffix", "a string", s);
    if (!s.get<std::string>().empty())
      return bad_field("suffix",
                       "'suffix' is not supported (the served model has no "
                       "fill-in-the-middle template): omit it or send \"\"");
  }
  if (present(j, "user") && !j.at("user").is_string())
    return wrong_type("user", "a string", j.at("user"));
  return std::nullopt;
}

std::optional<ApiError> check_tgi(const json& j) {
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
  for (const auto& [key, v] : j.items())
    if (!top.count(key)) return unknown_field(key, top);
  if (present(j, "stream") && !j.at("stream").is_boolean())
    return wrong_type("stream", "a boolean", j.at("stream"));
  auto pit = j.find("parameters");
  if (pit == j.end() || !pit->is_object()) return std::nullopt;  // types: request_parse.cpp
  const json& p = *pit;
  for (const auto& [key, v] : p.items())
    if (!params.count(key)) return unknown_field("parameters." + key, params);
  if (present(p, "best_of")) {
    std::optional<ApiError> err;
    auto b = as_int(p.at("best_of"), "parameters.best_of", &err);
    if (err) return err;
    if (*b != 1)
      return bad_field("parameters.best_of",
                       fmt::format("'parameters.best_of' must be 1 (this server generates one "
                                   "sequence per request), got {}",
                                   *b));
  }
  if (present(p, "watermark")) {
    if (!p.at("watermark").is_boolean())
      return wrong_type("parameters.watermark", "a boolean", p.at("watermark"));
    if (p.at("watermark").get<bool>())
      return bad_field("parameters.watermark",
                       "'parameters.watermark' is not implemented: send false or omit it");
  }
  const Refusal refused[] = {
      {"grammar", "constrained decoding (JSON / regex grammars) is not implemented: omit it"},
      {"adapter_id", "LoRA adapters are not served: omit it"},
  };
  for (const auto& r : refused)
    if (present(p, r.field))
      return bad_field(std::string("parameters.") + r.field,
                       fmt::format("'parameters.{}': {}", r.field, r.why));
  return std::nullopt;
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

}  // namespace

std::optional<ApiError> check_fields(ApiKind kind, const json& body) {
  switch (kind) {
    case ApiKind::kCompletion:
    case ApiKind::kChat:
      return check_openai(kind, body);
    case ApiKind::kTgi:
      return check_tgi(body);
    case ApiKind::kKServe:
      break;
  }
  return std::nullopt;
}

std::optional<ApiError> parse_penalty_fields(const json& j, const std::string& pre,
                                             const ModelInfo& m, GenRequest* g) {
  SamplingParams& sp = g->sampling;
  std::optional<double> v;
  for (const char* f : {"presence_penalty", "frequency_penalty"}) {
    v.reset();
    if (auto e = get_number(j, f, pre + f, &v)) return e;
    if (!v) continue;
    if (!(*v >= -2 && *v <= 2))
      return bad_field(pre + f, fmt::format("'{}{}' must be between -2 and 2, got {}", pre, f, *v));
    (std::string(f) == "presence_penalty" ? sp.presence_penalty : sp.frequency_penalty) = *v;
  }
  v.reset();
  if (auto e = get_number(j, "repetition_penalty", pre + "repetition_penalty", &v)) return e;
  if (v) {
    if (!(*v > 0 && *v <= 100))
      return bad_field(pre + "repetition_penalty",
                       fmt::format("'{}repetition_penalty' must be > 0 and <= 100 (1: no "
                                   "penalty), got {}",
                                   pre, *v));
    sp.repetition_penalty = *v;
  }
  if (present(j, "logit_bias")) {
    const std::string path = pre + "logit_bias";
    const json& lb = j.at("logit_bias");
    if (!lb.is_object())
      return wrong_type(path, "an object mapping token ids (as strings) to biases", lb);
    if (lb.size() > 300)
      return bad_field(path, fmt::format("'{}' holds at most 300 tokens, got {}", path, lb.size()));
    const int vocab = codec_of(m).vocab_size();
    for (const auto& [key, bias] : lb.items()) {
      const std::string kp = path + "." + key;
      long long id = -1;
      std::size_t used = 0;
      try {
        id = std::stoll(key, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != key.size() || key.empty() || id < 0 || id > (1 << 30))
        return bad_field(kp, fmt::format("'{}': the keys of '{}' must be token ids (integers >= "
                                         "0 written as strings), got \"{}\"",
                                         kp, path, key));
      if (vocab > 0 && id >= vocab)
        return bad_field(
            kp, fmt::format("'{}': {} is not a token id of this model (0..{})", kp, id, vocab - 1));
      if (!bias.is_number()) return wrong_type(kp, "a number", bias);
      const double b = bias.get<double>();
      if (!(b >= -100 && b <= 100))
        return bad_field(kp, fmt::format("'{}' must be between -100 and 100, got {}", kp, b));
      sp.logit_bias.emplace_back(static_cast<int>(id), static_cast<float>(b));
    }
    std::sort(sp.logit_bias.begin(), sp.logit_bias.end());
  }
  return std::nullopt;
}

std::optional<ApiError> parse_openai_fields(ApiKind kind, const json& j, const ModelInfo& m,
                                            ParsedRequest* out) {
  GenRequest& g = out->gen;
  if (auto e = parse_penalty_fields(j, "", m, &g)) return e;
  if (kind == ApiKind::kCompletion) {
    std::optional<long long> lp;
    if (present(j, "logprobs") && j.at("logprobs").is_boolean())
      return wrong_type("logprobs", "an integer from 0 to 5 (completions)", j.at("logprobs"));
    if (auto e = get_int_in(j, "logprobs", "logprobs", 0, 5, &lp)) return e;
    if (lp) g.sampling.logprobs = static_cast<int>(*lp);
    if (auto e = get_bool(j, "echo", "echo", &out->echo)) return e;
    if (out->echo && lp)
      return bad_field("echo",
                       "'echo' with 'logprobs' is not supported: the prompt's "
                       "log-probabilities are not computed; send one or the other");
    if (out->echo && j.contains("prompt")) out->prompt_text = prompt_text_of(j.at("prompt"), g, m);
    return std::nullopt;
  }
  bool want = false;
  if (auto e = get_bool(j, "logprobs", "logprobs", &want)) return e;
  std::optional<long long> top;
  if (auto e =
          get_int_in(j, "top_logprobs", "top_logprobs", 0, SamplingParams::kMaxTopLogprobs, &top))
    return e;
  if (top && !want) return bad_field("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  if (want) g.sampling.logprobs = static_cast<int>(top.value_or(0));
  return std::nullopt;
}

std::optional<ApiError> parse_tgi_fields(const json& p, const ModelInfo& m, ParsedRequest* out) {
  GenRequest& g = out->gen;
  const std::string pre = "parameters.";
  if (auto e = parse_penalty_fields(p, pre, m, &g)) return e;
  if (auto e = get_bool(p, "details", pre + "details", &out->details)) return e;
  if (auto e = get_bool(p, "decoder_input_details", pre + "decoder_input_details",
                        &out->decoder_input_details))
    return e;
  if (auto e = get_bool(p, "return_full_text", pre + "return_full_text", &out->return_full_text))
    return e;
  std::optional<long long> top_n, truncate;
  if (auto e = get_int_in(p, "top_n_tokens", pre + "top_n_tokens", 0,
                          SamplingParams::kMaxTopLogprobs, &top_n))
    return e;
  out->top_n_tokens = static_cast<int>(top_n.value_or(0));
  // TGI reports every generated token's logprob (the stream's tokens, details.tokens).
  g.sampling.logprobs = out->top_n_tokens;
  std::optional<double> typical;
  if (auto e = get_number(p, "typical_p", pre + "typical_p", &typical)) return e;
  if (typical) {
    if (!(*typical > 0 && *typical <= 1))
      return bad_field(
          pre + "typical_p",
          fmt::format("'parameters.typical_p' must be > 0 and <= 1 (1: off), got {}", *typical));
    g.sampling.typical_p = *typical;
    // A sampling field: TGI samples when one is given (at temperature 1 unless set).
    if (g.sampling.temperature == 0 && !present(p, "temperature")) g.sampling.temperature = 1.0;
  }
  if (auto e = get_int_in(p, "truncate", pre + "truncate", 1, 1ll << 30, &truncate)) return e;
  if (truncate && g.prompt_tokens > *truncate) {
    const int keep = static_cast<int>(*truncate);
    if (!g.prompt_ids.empty()) g.prompt_ids.erase(g.prompt_ids.begin(), g.prompt_ids.end() - keep);
    g.prompt_tokens = keep;
  }
  return std::nullopt;
}

}  // namespace prima::server
