// Parsing and validation of OpenAI, TGI and KServe v2 request bodies (see request_parse.h).
#include "server/request_parse.h"

#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "engine/config/json_parse.h"
#include "engine/config/json_reader.h"
#include "server/json_body.h"
#include "server/request_fields.h"
#include "server/text_codec.h"

namespace prima::server {
namespace {

using config::JsonReader;
using nlohmann::json;

void read_priority(const JsonReader& r, Priority* out) {
  const json& v = r.value("priority");
  if (v.is_string()) {
    if (!parse_priority(v.get<std::string>(), out))
      r.fail("priority", fmt::format("must be \"high\", \"normal\" or \"low\", got \"{}\"",
                                     v.get<std::string>()));
  } else if (v.is_number_integer()) {
    const auto p = r.integer("priority");
    if (p < 0 || p > 2)
      r.fail("priority", fmt::format("must be 0 (high), 1 (normal) or 2 (low), got {}", p));
    *out = static_cast<Priority>(p);
  } else {
    r.fail_type("priority", "a string (\"high\", \"normal\", \"low\") or an integer 0..2", v);
  }
}

// "priority" / "sla" in `r`'s object or in its "metadata".
void parse_qos(const JsonReader& r, GenRequest* g) {
  const auto md = r.optional_object("metadata");
  for (const JsonReader* src : {&r, md ? &*md : nullptr}) {
    if (!src) continue;
    if (src->has("priority")) read_priority(*src, &g->priority);
    g->sla_s = src->duration_s("sla", g->sla_s);
  }
}

// "model": one of the served names (echoed back as sent), a TGI client's placeholder
// (answered with the served name), or absent (the served model, as vLLM does).
std::optional<ApiError> check_model(const JsonReader& r, const ModelInfo& m, std::string* out) {
  const std::string asked = r.string("model", m.name);
  const auto name = served_name(m, asked);
  if (!name) return model_not_found(asked, m.name);
  *out = *name;
  return std::nullopt;
}

// max_tokens (explicit or default) against the context left after the prompt. `min`: the
// smallest value accepted (0 for a scoring request, which the caller turns into 1).
std::optional<ApiError> check_lengths(std::optional<std::int64_t> max_tokens,
                                      const std::string& field, const ModelInfo& m,
                                      const ParseLimits& lim, GenRequest* g, int min = 1) {
  const int ctx = m.max_model_len;
  if (ctx > 0 && g->prompt_tokens >= ctx)
    return bad_field("prompt", fmt::format("the prompt is {} tokens; this model's maximum context "
                                           "length is {} tokens (prompt + output)",
                                           g->prompt_tokens, ctx));
  const long long cap = lim.max_tokens_cap > 0 ? lim.max_tokens_cap : (ctx > 0 ? ctx : 1 << 30);
  if (max_tokens) {
    if (*max_tokens < min || *max_tokens > cap)
      return bad_field(field, fmt::format("'{}' must be between {} and {}, got {}{}", field, min,
                                          cap, *max_tokens,
                                          *max_tokens == 0 ? " (0 scores the prompt: only with "
                                                             "'echo': true on /v1/completions)"
                                                           : ""));
    if (*max_tokens == 0) *max_tokens = 1;  // scoring: one token is sampled and left out
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
    return bad_field(at, fmt::format("'{}' must be a string, a list of token ids, or a list "
                                     "holding one of those, got {}",
                                     at, config::brief(*p)));
  if (p->empty()) return bad_field(at, fmt::format("'{}' must not be empty", at));
  for (std::size_t i = 0; i < p->size(); ++i) {
    const json& e = (*p)[i];
    if (p == &v && (e.is_string() || e.is_array()))
      return bad_field(path, fmt::format("'{}': batched prompts are not supported; send one "
                                         "prompt per request",
                                         path));
    if (!e.is_number_integer() || e.get<long long>() < 0 || e.get<long long>() > (1 << 30))
      return bad_field(at, fmt::format("'{}[{}]' must be a token id (an integer >= 0), got {}", at,
                                       i, config::brief(e)));
    g->prompt_ids.push_back(e.get<int>());
  }
  g->prompt_tokens = static_cast<int>(g->prompt_ids.size());
  return codec_of(m).check_ids(g->prompt_ids, at);
}

}  // namespace

std::string message_content(const JsonReader& msg, const char* text_type) {
  if (!msg.has("content")) return "";
  const json& c = msg.value("content");
  if (c.is_null()) return "";
  if (c.is_string()) return c.get<std::string>();
  if (!c.is_array()) msg.fail_type("content", "a string or a list of content parts", c);
  std::string text;
  for (const JsonReader& part : msg.objects("content")) {
    const std::string type = part.string("type", text_type);
    if (type != text_type && type != "text")
      part.fail("type", fmt::format("'{}' is not supported: the served model reads text only "
                                    "(content parts of type \"{}\")",
                                    type, text_type));
    refuse_unknown_fields(part, {"type", "text"});
    text += part.string("text");
  }
  return text;
}

std::string chat_role(const JsonReader& msg) {
  std::string role = msg.string("role");
  if (role == "developer") return "system";  // OpenAI's newer name for the system role
  if (role == "tool" || role == "function")
    msg.fail("role", fmt::format("'{}' is not supported: this server does no tool calling", role));
  if (role != "system" && role != "user" && role != "assistant")
    msg.fail("role", fmt::format("must be \"system\", \"developer\", \"user\" or "
                                 "\"assistant\", got \"{}\"",
                                 role));
  return role;
}

namespace {

std::optional<ApiError> parse_chat_messages(const JsonReader& r, const ModelInfo& m,
                                            const ChatOptions& opts, GenRequest* g,
                                            std::vector<ChatTurn>* out = nullptr) {
  if (const json& v = r.value("messages"); !v.is_array())
    r.fail_type("messages", "a list of messages", v);
  const std::vector<JsonReader> msgs = r.objects("messages");
  if (msgs.empty()) r.fail("messages", "must not be empty");
  std::vector<ChatTurn> turns;
  for (const JsonReader& msg : msgs) {
    // "name" is accepted (OpenAI's participant name); the chat templates do not render it.
    for (const char* f : {"tool_calls", "tool_call_id", "function_call"})
      if (msg.has(f)) msg.fail(f, "is not supported: this server does no tool calling");
    refuse_unknown_fields(msg, {"role", "content", "name"});
    msg.string("name", "");
    std::string role = chat_role(msg);
    turns.push_back({std::move(role), message_content(msg, "text")});
  }
  if (auto e = codec_of(m).encode_chat(turns, opts, g)) return e;
  if (g->prompt_tokens < 1) r.fail("messages", "render to no tokens");
  if (out) *out = std::move(turns);
  return std::nullopt;
}

// "stop": a string or a list of at most 16 non-empty strings.
void parse_stop(const JsonReader& r, GenRequest* g) {
  if (!r.has("stop")) return;
  const json& v = r.value("stop");
  if (v.is_string()) {
    g->stop.push_back(v.get<std::string>());
  } else if (v.is_array()) {
    if (v.size() > 16) r.fail("stop", fmt::format("holds at most 16 strings, got {}", v.size()));
    for (auto& s : r.strings("stop")) g->stop.push_back(std::move(s));
  } else {
    r.fail_type("stop", "a string or a list of strings", v);
  }
  for (const auto& s : g->stop)
    if (s.empty()) r.fail("stop", "must not hold an empty string");
}

enum class SamplingDefault { kSample, kGreedyUnlessAsked, kGreedyUnlessTemperature };

// temperature, top_p, top_k, seed, stop, ignore_eos (and TGI's do_sample) in `r`'s object.
void parse_sampling(const JsonReader& r, SamplingDefault def, GenRequest* g) {
  const auto temp = r.optional_number("temperature");
  if (temp && !(*temp >= 0 && *temp <= 100))
    r.fail("temperature", fmt::format("must be between 0 and 100, got {}", *temp));
  const auto top_p = r.optional_number("top_p");
  if (top_p && !(*top_p > 0 && *top_p <= 1))
    r.fail("top_p", fmt::format("must be > 0 and <= 1, got {}", *top_p));
  const auto top_k = r.optional_integer("top_k");
  if (top_k && (*top_k < -1 || *top_k > (1 << 24)))
    r.fail("top_k", fmt::format("must be -1 or 0 (off) or a positive integer, got {}", *top_k));
  const auto seed = r.optional_integer("seed");
  const bool do_sample =
      def == SamplingDefault::kGreedyUnlessAsked && r.boolean("do_sample", false);
  g->ignore_eos = r.boolean("ignore_eos", g->ignore_eos);
  parse_stop(r, g);
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
}

// vLLM's chat rendering fields, at the top level or in "chat_template_kwargs".
ChatOptions chat_options(const JsonReader& r) {
  ChatOptions o;
  if (const auto kw = r.optional_object("chat_template_kwargs")) {
    for (const auto& [key, v] : kw->json().items())
      if (key != "add_generation_prompt" && key != "continue_final_message")
        kw->fail(key,
                 "is not a variable of the served model's chat template (it takes "
                 "add_generation_prompt and continue_final_message)");
    o.add_generation_prompt = kw->boolean("add_generation_prompt", o.add_generation_prompt);
    o.continue_final_message = kw->boolean("continue_final_message", o.continue_final_message);
  }
  o.add_generation_prompt = r.boolean("add_generation_prompt", o.add_generation_prompt);
  o.continue_final_message = r.boolean("continue_final_message", o.continue_final_message);
  if (o.add_generation_prompt && o.continue_final_message)
    r.fail("continue_final_message",
           "cannot be true with add_generation_prompt true: send add_generation_prompt: false "
           "to continue the final message");
  return o;
}

std::optional<ApiError> parse_openai(ApiKind kind, const JsonReader& r, const ModelInfo& m,
                                     const ParseLimits& lim, ParsedRequest* out) {
  if (auto e = check_model(r, m, &out->model)) return e;
  check_fields(kind, r);
  GenRequest& g = out->gen;
  if (kind == ApiKind::kCompletion) {
    if (auto e = parse_prompt(r.value("prompt"), "prompt", m, &g)) return e;
  } else {
    const ChatOptions opts = chat_options(r);
    std::vector<ChatTurn> turns;
    if (auto e = parse_chat_messages(r, m, opts, &g, &turns)) return e;
    // echo: the answer starts with the final message when it is the assistant's own.
    if (r.boolean("echo", false) && turns.back().role == "assistant")
      out->chat_echo = turns.back().content;
  }
  parse_sampling(r, SamplingDefault::kSample, &g);
  parse_openai_fields(kind, r, m, out);
  if (const auto n = r.optional_integer("n"); n && *n != 1)
    r.fail("n", fmt::format("must be 1, got {}", *n));
  std::string field = "max_tokens";
  auto max_tokens = r.optional_integer(field);
  if (kind == ApiKind::kChat && !max_tokens) {
    max_tokens = r.optional_integer("max_completion_tokens");
    if (max_tokens) field = "max_completion_tokens";
  }
  out->stream = r.boolean("stream", out->stream);
  if (const auto so = r.optional_object("stream_options")) {
    refuse_unknown_fields(*so, {"include_usage", "continuous_usage_stats"});
    out->include_usage = so->boolean("include_usage", out->include_usage);
    out->continuous_usage = so->boolean("continuous_usage_stats", out->continuous_usage);
    if (!out->stream && (so->has("include_usage") || so->has("continuous_usage_stats")))
      r.fail("stream_options", "is only allowed with 'stream': true");
  }
  parse_qos(r, &g);
  // max_tokens 0 on completions with echo: score the prompt (lm-eval's loglikelihood call).
  out->score_only = kind == ApiKind::kCompletion && out->echo && max_tokens && *max_tokens == 0;
  if (auto e = check_lengths(max_tokens, field, m, lim, &g, out->score_only ? 0 : 1)) return e;
  if (g.min_tokens > g.max_tokens)
    r.fail("min_tokens",
           fmt::format("must be at most '{}' ({}), got {}", field, g.max_tokens, g.min_tokens));
  return std::nullopt;
}

// The Responses API's input as chat turns: "instructions" (a system message first), then
// "input", a string (one user message) or a list of message items. Other item types
// (function calls and their outputs, reasoning, files, images) are refused naming the type.
std::vector<ChatTurn> responses_turns(const JsonReader& r) {
  std::vector<ChatTurn> turns;
  if (r.has("instructions") && !r.json().at("instructions").is_null())
    turns.push_back({"system", r.string("instructions")});
  const json& in = r.value("input");
  if (in.is_string()) {
    turns.push_back({"user", in.get<std::string>()});
    return turns;
  }
  if (!in.is_array()) r.fail_type("input", "a string or a list of input items", in);
  if (in.empty()) r.fail("input", "must not be empty");
  for (const JsonReader& item : r.objects("input")) {
    const std::string type = item.string("type", "message");
    if (type != "message")
      item.fail("type", fmt::format("'{}' is not supported: this server takes message items "
                                    "with text only (no tools, files or images)",
                                    type));
    refuse_unknown_fields(item, {"type", "role", "content", "id", "status"});
    std::string role = chat_role(item);
    const char* part = role == "assistant" ? "output_text" : "input_text";
    turns.push_back({std::move(role), message_content(item, part)});
  }
  return turns;
}

std::optional<ApiError> parse_responses(const JsonReader& r, const ModelInfo& m,
                                        const ParseLimits& lim, ParsedRequest* out) {
  if (auto e = check_model(r, m, &out->model)) return e;
  refuse_unknown_fields(r, {"model",
                            "input",
                            "instructions",
                            "max_output_tokens",
                            "temperature",
                            "top_p",
                            "stream",
                            "store",
                            "metadata",
                            "user",
                            "tools",
                            "tool_choice",
                            "parallel_tool_calls",
                            "text",
                            "truncation",
                            "previous_response_id",
                            "reasoning",
                            "include",
                            "background",
                            "service_tier",
                            "top_logprobs"});
  const json& j = r.json();
  if (r.has("tools") && !(j.at("tools").is_array() && j.at("tools").empty()))
    r.fail("tools", "are not supported: this server does no tool calling; send no tools");
  if (r.has("tool_choice") && !(j.at("tool_choice") == "none" || j.at("tool_choice") == "auto"))
    r.fail("tool_choice", "is not supported (no tool calling): omit it or send \"none\"");
  r.boolean("parallel_tool_calls", false);
  if (r.boolean("store", false))
    r.fail("store",
           "is not supported: responses are not stored here, so they cannot be "
           "retrieved or continued; send false or omit it");
  if (r.has("previous_response_id") && !j.at("previous_response_id").is_null())
    r.fail("previous_response_id",
           "is not supported: responses are not stored; send the whole conversation as 'input'");
  for (const char* f : {"reasoning", "top_logprobs"})
    if (r.has(f) && !j.at(f).is_null()) r.fail(f, "is not supported by this server: omit it");
  if (r.boolean("background", false)) r.fail("background", "is not supported: send false");
  if (r.has("include") && !(j.at("include").is_array() && j.at("include").empty()) &&
      !j.at("include").is_null())
    r.fail("include", "is not supported: no extra output items are produced; omit it");
  if (const auto text = r.optional_object("text")) {
    refuse_unknown_fields(*text, {"format"});
    if (const auto f = text->optional_object("format"); f && f->string("type") != "text")
      f->fail("type",
              "must be \"text\": structured output needs constrained decoding, which "
              "this server does not do");
  }
  if (const std::string t = r.string("truncation", "disabled"); t != "disabled")
    r.fail("truncation", "must be \"disabled\": this server does not truncate the input");
  r.string("user", "");
  r.string("service_tier", "auto");
  if (r.has("metadata") && !j.at("metadata").is_null()) r.object("metadata");
  GenRequest& g = out->gen;
  if (auto e = codec_of(m).encode_chat(responses_turns(r), ChatOptions{}, &g)) return e;
  if (g.prompt_tokens < 1) r.fail("input", "renders to no tokens");
  parse_sampling(r, SamplingDefault::kSample, &g);
  out->stream = r.boolean("stream", out->stream);
  return check_lengths(r.optional_integer("max_output_tokens"), "max_output_tokens", m, lim, &g);
}

std::optional<ApiError> parse_tgi(const JsonReader& r, const ModelInfo& m, const ParseLimits& lim,
                                  ParsedRequest* out) {
  out->model = m.name;
  check_fields(ApiKind::kTgi, r);
  GenRequest& g = out->gen;
  out->prompt_text = r.string("inputs");
  if (auto e = encode_text(out->prompt_text, "inputs", m, &g)) return e;
  static const json kNoParameters = json::object();
  const auto params = r.optional_object("parameters");
  std::optional<std::int64_t> max_new;
  if (params) {
    max_new = params->optional_integer("max_new_tokens");
    parse_qos(*params, &g);
    parse_sampling(*params, SamplingDefault::kGreedyUnlessAsked, &g);
  }
  parse_tgi_fields(params ? *params : JsonReader::request_body(kNoParameters, "parameters"), m,
                   out);
  parse_qos(r, &g);
  return check_lengths(max_new, "parameters.max_new_tokens", m, lim, &g);
}

// KServe v2: one BYTES tensor holding the prompt.
std::string kserve_prompt(const JsonReader& r) {
  const json& in = r.value("inputs");
  if (!in.is_array()) r.fail_type("inputs", "a list of tensors", in);
  if (in.size() != 1)
    r.fail("inputs",
           fmt::format("must hold exactly one BYTES tensor (the prompt), got {}", in.size()));
  const JsonReader t = r.objects("inputs")[0];
  if (!t.has("datatype") || t.value("datatype") != "BYTES") t.fail("datatype", "must be \"BYTES\"");
  t.string("name");
  if (!t.has("shape") || !t.value("shape").is_array())
    t.fail("shape", "must be a list of integers");
  const json* data = t.has("data") ? &t.value("data") : nullptr;
  if (!data || !data->is_array() || data->size() != 1 || !(*data)[0].is_string())
    t.fail("data", "must be a list holding one string");
  return (*data)[0].get<std::string>();
}

std::optional<ApiError> parse_kserve(const JsonReader& r, const ModelInfo& m,
                                     const ParseLimits& lim, ParsedRequest* out) {
  out->model = m.name;
  GenRequest& g = out->gen;
  if (auto e = encode_text(kserve_prompt(r), "inputs[0].data", m, &g)) return e;
  std::optional<std::int64_t> max_tokens;
  if (const auto params = r.optional_object("parameters")) {
    max_tokens = params->optional_integer("max_tokens");
    parse_qos(*params, &g);
    parse_sampling(*params, SamplingDefault::kGreedyUnlessTemperature, &g);
    parse_penalty_fields(*params, m, &g);
  }
  parse_qos(r, &g);
  return check_lengths(max_tokens, "parameters.max_tokens", m, lim, &g);
}

}  // namespace

nlohmann::json parse_or_null(const std::string& body) {
  auto j = config::parse_json(body, nullptr);
  return j ? std::move(*j) : json(json::value_t::discarded);
}

std::optional<ApiError> parse_request(ApiKind kind, const std::string& body, const ModelInfo& m,
                                      const ParseLimits& lim, ParsedRequest* out) {
  // Nesting is capped while parsing (config::kMaxJsonDepth): no later step recurses deeper.
  json j;
  if (auto e = parse_json_object(body, "the request body", &j)) return e;
  try {
    return field_errors([&]() -> std::optional<ApiError> {
      const JsonReader r = JsonReader::request_body(j);
      switch (kind) {
        case ApiKind::kCompletion:
        case ApiKind::kChat:
          return parse_openai(kind, r, m, lim, out);
        case ApiKind::kTgi:
          return parse_tgi(r, m, lim, out);
        case ApiKind::kKServe:
          return parse_kserve(r, m, lim, out);
        case ApiKind::kResponses:
          return parse_responses(r, m, lim, out);
      }
      return bad_field("", "unknown API");
    });
  } catch (const json::exception& e) {  // a type the checks above missed: still a 400
    return bad_field("", std::string("invalid request body: ") + e.what());
  }
}

std::optional<ApiError> encode_chat_messages(const nlohmann::json& body, const ModelInfo& m,
                                             GenRequest* g) {
  return field_errors(
      [&] { return parse_chat_messages(JsonReader::request_body(body), m, ChatOptions{}, g); });
}

}  // namespace prima::server
