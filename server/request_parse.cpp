// Parsing and validation of OpenAI, TGI and KServe v2 request bodies (see request_parse.h).
#include "server/request_parse.h"

#include <fmt/format.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "engine/config/json_parse.h"
#include "server/request_fields.h"
#include "server/text_codec.h"

namespace prima::server {
namespace {

using nlohmann::json;

const char* type_name(const json& v) {
  return v.type_name();
}

// A value for a message: scalars as JSON, containers by their type and size (never a deep dump).
std::string describe_value(const json& v) {
  if (v.is_array()) return fmt::format("a list of {}", v.size());
  if (v.is_object()) return fmt::format("an object of {} keys", v.size());
  std::string s = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

std::optional<ApiError> wrong_type(const std::string& field, const char* want, const json& v) {
  return bad_field(field, fmt::format("'{}' must be {}, got {}", field, want, type_name(v)));
}

// An optional integer field; *out keeps its value when absent (or null).
std::optional<ApiError> get_int(const json& j, const std::string& key, const std::string& path,
                                std::optional<long long>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (it->is_number_integer()) {
    *out = it->is_number_unsigned() && it->get<unsigned long long>() > (1ull << 62)
               ? (1ll << 62)
               : it->get<long long>();
    return std::nullopt;
  }
  if (it->is_number_float()) {  // 16.0 is fine; 1.5, 1e400 are not integers
    const double d = it->get<double>();
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) < 1e15) {
      *out = static_cast<long long>(d);
      return std::nullopt;
    }
  }
  return wrong_type(path, "an integer", *it);
}

std::optional<ApiError> get_bool(const json& j, const std::string& key, const std::string& path,
                                 bool* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return wrong_type(path, "a boolean", *it);
  *out = it->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> parse_priority_value(const json& v, const std::string& path,
                                             Priority* out) {
  if (v.is_string()) {
    if (parse_priority(v.get<std::string>(), out)) return std::nullopt;
    return bad_field(path, fmt::format("'{}' must be \"high\", \"normal\" or \"low\", got \"{}\"",
                                       path, v.get<std::string>()));
  }
  if (v.is_number_integer()) {
    const auto p = v.get<long long>();
    if (p >= 0 && p <= 2) {
      *out = static_cast<Priority>(p);
      return std::nullopt;
    }
    return bad_field(path,
                     fmt::format("'{}' must be 0 (high), 1 (normal) or 2 (low), got {}", path, p));
  }
  return wrong_type(path, "a string (\"high\", \"normal\", \"low\") or an integer 0..2", v);
}

std::optional<ApiError> parse_sla_value(const json& v, const std::string& path, double* out) {
  if (v.is_number()) {
    const double s = v.get<double>();
    if (s >= 0 && std::isfinite(s)) {
      *out = s;
      return std::nullopt;
    }
  } else if (v.is_string()) {
    if (parse_duration_s(v.get<std::string>(), out)) return std::nullopt;
  } else {
    return wrong_type(path, "a duration (seconds, or a string like \"200ms\")", v);
  }
  return bad_field(path, fmt::format("'{}' must be a duration >= 0 like \"200ms\" or 1.5, got {}",
                                     path, describe_value(v)));
}

// "priority" / "sla" at the top level or in "metadata".
std::optional<ApiError> parse_qos(const json& j, GenRequest* g) {
  auto md = j.find("metadata");
  if (md != j.end() && !md->is_null() && !md->is_object())
    return wrong_type("metadata", "an object", *md);
  for (const json* src : {&j, md != j.end() && md->is_object() ? &*md : nullptr}) {
    if (!src) continue;
    const std::string pre = src == &j ? "" : "metadata.";
    if (auto p = src->find("priority"); p != src->end() && !p->is_null())
      if (auto e = parse_priority_value(*p, pre + "priority", &g->priority)) return e;
    if (auto s = src->find("sla"); s != src->end() && !s->is_null())
      if (auto e = parse_sla_value(*s, pre + "sla", &g->sla_s)) return e;
  }
  return std::nullopt;
}

std::optional<ApiError> check_model(const json& j, const ModelInfo& m, bool required,
                                    std::string* out) {
  auto it = j.find("model");
  if (it == j.end() || it->is_null()) {
    if (required) return bad_field("model", "missing required field 'model'");
    *out = m.name;
    return std::nullopt;
  }
  if (!it->is_string()) return wrong_type("model", "a string", *it);
  *out = it->get<std::string>();
  if (*out != m.name) {
    ApiError e;
    e.status = 404;
    e.param = "model";
    e.type = "NotFoundError";
    e.code = "model_not_found";
    e.message = fmt::format("The model '{}' does not exist; this server serves '{}'", *out, m.name);
    return e;
  }
  return std::nullopt;
}

// max_tokens (explicit or default) against the context left after the prompt.
std::optional<ApiError> check_lengths(std::optional<long long> max_tokens, const std::string& field,
                                      const ModelInfo& m, const ParseLimits& lim, GenRequest* g) {
  const int ctx = m.max_model_len;
  if (ctx > 0 && g->prompt_tokens >= ctx)
    return bad_field("prompt", fmt::format("the prompt is {} tokens; this model's maximum context "
                                           "length is {} tokens (prompt + output)",
                                           g->prompt_tokens, ctx));
  const long long cap = lim.max_tokens_cap > 0 ? lim.max_tokens_cap : (ctx > 0 ? ctx : 1 << 30);
  if (max_tokens) {
    if (*max_tokens < 1 || *max_tokens > cap)
      return bad_field(
          field, fmt::format("'{}' must be between 1 and {}, got {}", field, cap, *max_tokens));
    if (ctx > 0 && g->prompt_tokens + *max_tokens > ctx)
      return bad_field(field, fmt::format("this model's maximum context length is {} tokens; the "
                                          "prompt is {} tokens and '{}' asks for {} more",
                                          ctx, g->prompt_tokens, field, *max_tokens));
    g->max_tokens = static_cast<int>(*max_tokens);
  } else {
    long long n = std::min<long long>(lim.default_max_tokens, cap);
    if (ctx > 0) n = std::min<long long>(n, ctx - g->prompt_tokens);
    g->max_tokens = static_cast<int>(std::max<long long>(1, n));
  }
  return std::nullopt;
}

const TextCodec& codec_of(const ModelInfo& m) {
  return m.codec ? *m.codec : synthetic_codec();
}

// Encodes a text prompt; an empty tokenization is an error naming the field.
std::optional<ApiError> encode_text(const std::string& text, const std::string& path,
                                    const ModelInfo& m, GenRequest* g) {
  codec_of(m).encode(text, g);
  if (g->prompt_tokens < 1)
    return bad_field(path, fmt::format("'{}' has no tokens: send a non-empty prompt", path));
  return std::nullopt;
}

// A prompt: a string, a list of token ids, or a list holding one of those (a batch of one).
// Nothing nests deeper: [["hello"]] is refused, and nothing here recurses.
std::optional<ApiError> parse_prompt(const json& v, const std::string& path, const ModelInfo& m,
                                     GenRequest* g) {
  const json* p = &v;
  std::string at = path;
  if (v.is_array() && v.size() == 1 && (v[0].is_string() || v[0].is_array())) {
    p = &v[0];
    at = path + "[0]";
  }
  if (p->is_string()) return encode_text(p->get<std::string>(), at, m, g);
  if (!p->is_array())
    return wrong_type(at, "a string, a list of token ids, or a list holding one of those", *p);
  if (p->empty()) return bad_field(at, fmt::format("'{}' must not be empty", at));
  for (std::size_t i = 0; i < p->size(); ++i) {
    const json& e = (*p)[i];
    if (p == &v && (e.is_string() || e.is_array()))
      return bad_field(path, fmt::format("'{}': batched prompts are not supported; send one "
                                         "prompt per request",
                                         path));
    if (!e.is_number_integer() || e.get<long long>() < 0 || e.get<long long>() > (1 << 30))
      return bad_field(at, fmt::format("'{}[{}]' must be a token id (an integer >= 0), got {}", at,
                                       i, describe_value(e)));
    g->prompt_ids.push_back(e.get<int>());
  }
  g->prompt_tokens = static_cast<int>(g->prompt_ids.size());
  return codec_of(m).check_ids(g->prompt_ids, at);
}

std::optional<ApiError> parse_chat_messages(const json& j, const ModelInfo& m, GenRequest* g) {
  auto it = j.find("messages");
  if (it == j.end() || it->is_null())
    return bad_field("messages", "missing required field 'messages'");
  if (!it->is_array()) return wrong_type("messages", "a list of messages", *it);
  if (it->empty()) return bad_field("messages", "'messages' must not be empty");
  std::vector<ChatTurn> turns;
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& msg = (*it)[i];
    const std::string p = fmt::format("messages[{}]", i);
    if (!msg.is_object()) return wrong_type(p, "an object", msg);
    auto role = msg.find("role");
    if (role == msg.end()) return bad_field(p + ".role", fmt::format("missing '{}.role'", p));
    if (!role->is_string()) return wrong_type(p + ".role", "a string", *role);
    ChatTurn t;
    t.role = role->get<std::string>();
    auto content = msg.find("content");
    if (content == msg.end() || content->is_null()) {
    } else if (content->is_string()) {
      t.content = content->get<std::string>();
    } else if (content->is_array()) {
      for (std::size_t k = 0; k < content->size(); ++k) {
        const json& part = (*content)[k];
        const std::string pp = fmt::format("{}.content[{}]", p, k);
        if (!part.is_object()) return wrong_type(pp, "an object", part);
        auto text = part.find("text");
        if (text == part.end() || !text->is_string())
          return bad_field(pp + ".text", fmt::format("'{}.text' must be a string", pp));
        t.content += text->get<std::string>();
      }
    } else {
      return wrong_type(p + ".content", "a string or a list of content parts", *content);
    }
    turns.push_back(std::move(t));
  }
  if (auto e = codec_of(m).encode_chat(turns, g)) return e;
  if (g->prompt_tokens < 1) return bad_field("messages", "'messages' render to no tokens");
  return std::nullopt;
}

std::optional<ApiError> get_number(const json& j, const std::string& key, const std::string& path,
                                   std::optional<double>* out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return wrong_type(path, "a number", *it);
  *out = it->get<double>();
  return std::nullopt;
}

enum class SamplingDefault { kSample, kGreedyUnlessAsked, kGreedyUnlessTemperature };

// temperature, top_p, top_k, seed, stop, ignore_eos (and TGI's do_sample) in `j`; field
// paths start with `pre` ("" or "parameters.").
std::optional<ApiError> parse_sampling(const json& j, const std::string& pre, SamplingDefault def,
                                       GenRequest* g) {
  std::optional<double> temp, top_p;
  std::optional<long long> top_k, seed;
  if (auto e = get_number(j, "temperature", pre + "temperature", &temp)) return e;
  if (temp && !(*temp >= 0 && *temp <= 100))
    return bad_field(pre + "temperature", fmt::format("'{}temperature' must be between 0 and "
                                                      "100, got {}",
                                                      pre, *temp));
  if (auto e = get_number(j, "top_p", pre + "top_p", &top_p)) return e;
  if (top_p && !(*top_p > 0 && *top_p <= 1))
    return bad_field(pre + "top_p",
                     fmt::format("'{}top_p' must be > 0 and <= 1, got {}", pre, *top_p));
  if (auto e = get_int(j, "top_k", pre + "top_k", &top_k)) return e;
  if (top_k && (*top_k < -1 || *top_k > (1 << 24)))
    return bad_field(pre + "top_k", fmt::format("'{}top_k' must be -1 or 0 (off) or a positive "
                                                "integer, got {}",
                                                pre, *top_k));
  if (auto e = get_int(j, "seed", pre + "seed", &seed)) return e;
  bool do_sample = false;
  if (def == SamplingDefault::kGreedyUnlessAsked)
    if (auto e = get_bool(j, "do_sample", pre + "do_sample", &do_sample)) return e;
  if (auto e = get_bool(j, "ignore_eos", pre + "ignore_eos", &g->ignore_eos)) return e;
  if (auto st = j.find("stop"); st != j.end() && !st->is_null()) {
    const std::string path = pre + "stop";
    if (st->is_string()) {
      g->stop.push_back(st->get<std::string>());
    } else if (st->is_array()) {
      if (st->size() > 16)
        return bad_field(path,
                         fmt::format("'{}' holds at most 16 strings, got {}", path, st->size()));
      for (std::size_t i = 0; i < st->size(); ++i) {
        if (!(*st)[i].is_string())
          return wrong_type(fmt::format("{}[{}]", path, i), "a string", (*st)[i]);
        g->stop.push_back((*st)[i].get<std::string>());
      }
    } else {
      return wrong_type(path, "a string or a list of strings", *st);
    }
    for (const auto& s : g->stop)
      if (s.empty())
        return bad_field(path, fmt::format("'{}' must not hold an empty string", path));
  }
  bool sample = true;
  if (def == SamplingDefault::kGreedyUnlessAsked) sample = do_sample || temp || top_p || top_k;
  if (def == SamplingDefault::kGreedyUnlessTemperature) sample = temp.has_value();
  SamplingParams& sp = g->sampling;
  sp.temperature = sample ? temp.value_or(1.0) : 0.0;
  sp.top_p = top_p.value_or(1.0);
  sp.top_k = top_k && *top_k > 0 ? static_cast<int>(*top_k) : 0;
  if (seed) {
    sp.seed = static_cast<std::uint64_t>(*seed);
    g->has_seed = true;
  }
  return std::nullopt;
}

std::optional<ApiError> parse_openai(ApiKind kind, const json& j, const ModelInfo& m,
                                     const ParseLimits& lim, ParsedRequest* out) {
  if (auto e = check_model(j, m, true, &out->model)) return e;
  if (auto e = check_fields(kind, j)) return e;
  GenRequest& g = out->gen;
  if (kind == ApiKind::kCompletion) {
    auto p = j.find("prompt");
    if (p == j.end() || p->is_null()) return bad_field("prompt", "missing required field 'prompt'");
    if (auto e = parse_prompt(*p, "prompt", m, &g)) return e;
  } else if (auto e = parse_chat_messages(j, m, &g)) {
    return e;
  }
  if (auto e = parse_sampling(j, "", SamplingDefault::kSample, &g)) return e;
  if (auto e = parse_openai_fields(kind, j, m, out)) return e;
  std::optional<long long> n;
  if (auto e = get_int(j, "n", "n", &n)) return e;
  if (n && *n != 1) return bad_field("n", fmt::format("'n' must be 1, got {}", *n));
  std::optional<long long> max_tokens;
  std::string field = "max_tokens";
  if (auto e = get_int(j, "max_tokens", "max_tokens", &max_tokens)) return e;
  if (kind == ApiKind::kChat && !max_tokens) {
    if (auto e = get_int(j, "max_completion_tokens", "max_completion_tokens", &max_tokens))
      return e;
    if (max_tokens) field = "max_completion_tokens";
  }
  if (auto e = get_bool(j, "stream", "stream", &out->stream)) return e;
  if (auto so = j.find("stream_options"); so != j.end() && !so->is_null()) {
    if (!so->is_object()) return wrong_type("stream_options", "an object", *so);
    if (auto e =
            get_bool(*so, "include_usage", "stream_options.include_usage", &out->include_usage))
      return e;
  }
  if (auto e = parse_qos(j, &g)) return e;
  return check_lengths(max_tokens, field, m, lim, &g);
}

std::optional<ApiError> parse_tgi(const json& j, const ModelInfo& m, const ParseLimits& lim,
                                  ParsedRequest* out) {
  out->model = m.name;
  if (auto e = check_fields(ApiKind::kTgi, j)) return e;
  auto in = j.find("inputs");
  if (in == j.end() || in->is_null()) return bad_field("inputs", "missing required field 'inputs'");
  if (!in->is_string()) return wrong_type("inputs", "a string", *in);
  GenRequest& g = out->gen;
  out->prompt_text = in->get<std::string>();
  if (auto e = encode_text(out->prompt_text, "inputs", m, &g)) return e;
  std::optional<long long> max_new;
  auto params = j.find("parameters");
  if (params != j.end() && !params->is_null()) {
    if (!params->is_object()) return wrong_type("parameters", "an object", *params);
    if (auto e = get_int(*params, "max_new_tokens", "parameters.max_new_tokens", &max_new))
      return e;
    if (auto e = parse_qos(*params, &g)) return e;
    if (auto e = parse_sampling(*params, "parameters.", SamplingDefault::kGreedyUnlessAsked, &g))
      return e;
  }
  if (auto e = parse_tgi_fields(params != j.end() && params->is_object() ? *params : json::object(),
                                m, out))
    return e;
  if (auto e = parse_qos(j, &g)) return e;
  return check_lengths(max_new, "parameters.max_new_tokens", m, lim, &g);
}

std::optional<ApiError> parse_kserve(const json& j, const ModelInfo& m, const ParseLimits& lim,
                                     ParsedRequest* out) {
  out->model = m.name;
  auto in = j.find("inputs");
  if (in == j.end() || in->is_null()) return bad_field("inputs", "missing required field 'inputs'");
  if (!in->is_array()) return wrong_type("inputs", "a list of tensors", *in);
  if (in->size() != 1)
    return bad_field("inputs", fmt::format("'inputs' must hold exactly one BYTES tensor (the "
                                           "prompt), got {}",
                                           in->size()));
  const json& t = (*in)[0];
  if (!t.is_object()) return wrong_type("inputs[0]", "an object", t);
  auto dt = t.find("datatype");
  if (dt == t.end() || !dt->is_string() || dt->get<std::string>() != "BYTES")
    return bad_field("inputs[0].datatype", "'inputs[0].datatype' must be \"BYTES\"");
  auto name = t.find("name");
  if (name == t.end() || !name->is_string())
    return bad_field("inputs[0].name", "'inputs[0].name' must be a string");
  auto shape = t.find("shape");
  if (shape == t.end() || !shape->is_array())
    return bad_field("inputs[0].shape", "'inputs[0].shape' must be a list of integers");
  auto data = t.find("data");
  if (data == t.end() || !data->is_array() || data->size() != 1 || !(*data)[0].is_string())
    return bad_field("inputs[0].data", "'inputs[0].data' must be a list holding one string");
  GenRequest& g = out->gen;
  if (auto e = encode_text((*data)[0].get<std::string>(), "inputs[0].data", m, &g)) return e;
  std::optional<long long> max_tokens;
  auto params = j.find("parameters");
  if (params != j.end() && !params->is_null()) {
    if (!params->is_object()) return wrong_type("parameters", "an object", *params);
    if (auto e = get_int(*params, "max_tokens", "parameters.max_tokens", &max_tokens)) return e;
    if (auto e = parse_qos(*params, &g)) return e;
    if (auto e =
            parse_sampling(*params, "parameters.", SamplingDefault::kGreedyUnlessTemperature, &g))
      return e;
    if (auto e = parse_penalty_fields(*params, "parameters.", m, &g)) return e;
  }
  if (auto e = parse_qos(j, &g)) return e;
  return check_lengths(max_tokens, "parameters.max_tokens", m, lim, &g);
}

}  // namespace

nlohmann::json parse_or_null(const std::string& body) {
  auto j = config::parse_json(body, nullptr);
  return j ? std::move(*j) : json(json::value_t::discarded);
}

bool parse_duration_s(const std::string& s, double* out) {
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(s, &pos);
  } catch (const std::exception&) {
    return false;
  }
  const std::string unit = s.substr(pos);
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  if (unit == "ms") scale = 1e-3;
  if (unit == "us") scale = 1e-6;
  if (unit == "m" || unit == "min") scale = 60;
  if (scale == 0 || !(v >= 0) || !std::isfinite(v)) return false;
  *out = v * scale;
  return true;
}

std::optional<ApiError> parse_request(ApiKind kind, const std::string& body, const ModelInfo& m,
                                      const ParseLimits& lim, ParsedRequest* out) {
  // Nesting is capped while parsing (config::kMaxJsonDepth): no later step recurses deeper.
  config::JsonParseError perr;
  auto parsed = config::parse_json(body, &perr);
  if (!parsed)
    return bad_field("", "the request body is not valid JSON: " + config::describe(perr));
  const json& j = *parsed;
  if (!j.is_object())
    return bad_field("",
                     fmt::format("the request body must be a JSON object, got {}", type_name(j)));
  try {
    switch (kind) {
      case ApiKind::kCompletion:
      case ApiKind::kChat:
        return parse_openai(kind, j, m, lim, out);
      case ApiKind::kTgi:
        return parse_tgi(j, m, lim, out);
      case ApiKind::kKServe:
        return parse_kserve(j, m, lim, out);
    }
  } catch (const json::exception& e) {  // a type the checks above missed: still a 400
    return bad_field("", std::string("invalid request body: ") + e.what());
  }
  return bad_field("", "unknown API");
}

std::optional<ApiError> encode_chat_messages(const nlohmann::json& body, const ModelInfo& m,
                                             GenRequest* g) {
  return parse_chat_messages(body, m, g);
}

}  // namespace prima::server
