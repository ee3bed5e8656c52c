// vLLM's tokenizer routes beside the OpenAI API, in vLLM's shapes:
//   POST /tokenize {"model"?, "prompt": "..."} or {"model"?, "messages": [...]}
//     -> {"count", "max_model_len", "tokens": [ids], "token_strs": null | [texts]}
//     ("return_token_strs": true: each token's own text; a token that holds part of a UTF-8
//     character reads as U+FFFD there, while /detokenize of all the ids gives the text back)
//   POST /detokenize {"model"?, "tokens": [ids]} -> {"prompt": "..."}
// The ids are exactly the ones a completion (or chat completion) with that prompt is counted
// and run with: the model's tokenizer and chat template on the real backend; on the sim
// backend, which has no vocabulary, the synthetic ids of text_codec.h (a prompt of n tokens,
// counted as completions count it, reads as ids 0..n-1, its positions; id k reads back as
// the synthetic word W[k mod 32]). Options that would tokenize differently from a completion
// ("add_special_tokens": false, "add_generation_prompt": false, a custom chat template,
// tools) are refused with 400 naming the field; errors are in OpenAI's shape.
#include <fmt/format.h>

#include "server/json_body.h"
#include "server/routes.h"
#include "server/text_codec.h"
#include "server/text_decoder.h"

namespace prima::server {
namespace {

using nlohmann::json;

const TextCodec& codec_of(const ServerContext& ctx) {
  return ctx.model.codec ? *ctx.model.codec : synthetic_codec();
}

// "model" is optional (vLLM's tokenizer requests); when given it must be the served one.
std::optional<ApiError> check_model(const json& j, const ServerContext& ctx) {
  auto it = j.find("model");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_string())
    return bad_field("model", fmt::format("'model' must be a string, got {}", it->type_name()));
  if (it->get<std::string>() == ctx.model.name) return std::nullopt;
  ApiError e;
  e.status = 404;
  e.param = "model";
  e.type = "NotFoundError";
  e.code = "model_not_found";
  e.message = fmt::format("The model '{}' does not exist; this server serves '{}'",
                          it->get<std::string>(), ctx.model.name);
  return e;
}

// An optional boolean that only `allowed` may take: the other value would tokenize
// differently from how the engine runs the prompt. *out: its value (else `allowed`).
std::optional<ApiError> fixed_bool(const json& j, const char* key, bool allowed, const char* why,
                                   bool* out = nullptr) {
  bool v = allowed;
  if (auto it = j.find(key); it != j.end() && !it->is_null()) {
    if (!it->is_boolean())
      return bad_field(key, fmt::format("'{}' must be a boolean, got {}", key, brief_json(*it)));
    v = it->get<bool>();
  }
  if (out) *out = v;
  if (v == allowed) return std::nullopt;
  return bad_field(key, fmt::format("'{}': only {} is supported ({})", key, allowed, why));
}

std::optional<ApiError> tokenize(const ServerContext& ctx, const json& j, json* answer) {
  if (auto e = check_model(j, ctx)) return e;
  const bool has_prompt = j.contains("prompt") && !j["prompt"].is_null();
  const bool has_messages = j.contains("messages") && !j["messages"].is_null();
  if (has_prompt == has_messages)
    return bad_field(has_prompt ? "messages" : "prompt",
                     has_prompt ? "send either 'prompt' or 'messages', not both"
                                : "missing 'prompt' (a string) or 'messages' (a list of chat "
                                  "messages)");
  for (const char* key : {"chat_template", "chat_template_kwargs", "tools", "mm_processor_kwargs"})
    if (auto it = j.find(key); it != j.end() && !it->is_null())
      return bad_field(key, fmt::format("'{}' is not supported: prompts are rendered with the "
                                        "model's own chat template, as chat completions are",
                                        key));
  if (auto e = fixed_bool(j, "add_special_tokens", true,
                          "the engine adds the model's special tokens to every prompt"))
    return e;
  if (auto e = fixed_bool(j, "add_generation_prompt", true,
                          "chat completions always end with the assistant's turn"))
    return e;
  if (auto e = fixed_bool(j, "continue_final_message", false,
                          "chat completions always start a new assistant turn"))
    return e;
  bool strs = false;
  if (auto it = j.find("return_token_strs"); it != j.end() && !it->is_null()) {
    if (!it->is_boolean())
      return bad_field("return_token_strs", fmt::format("'return_token_strs' must be a boolean, "
                                                        "got {}",
                                                        brief_json(*it)));
    strs = it->get<bool>();
  }
  const TextCodec& codec = codec_of(ctx);
  GenRequest g;
  if (has_prompt) {
    if (!j["prompt"].is_string())
      return bad_field("prompt",
                       fmt::format("'prompt' must be a string, got {}", j["prompt"].type_name()));
    codec.encode(j["prompt"].get<std::string>(), &g);
  } else if (auto e = encode_chat_messages(j, ctx.model, &g)) {
    return e;
  }
  const std::vector<int> ids = codec.prompt_ids(g);
  json token_strs = nullptr;
  if (strs) {
    token_strs = json::array();
    for (int id : ids) token_strs.push_back(valid_utf8(codec.id_text(id)));
  }
  *answer = {{"count", ids.size()},
             {"max_model_len", ctx.model.max_model_len},
             {"tokens", ids},
             {"token_strs", token_strs}};
  return std::nullopt;
}

std::optional<ApiError> detokenize(const ServerContext& ctx, const json& j, json* answer) {
  if (auto e = check_model(j, ctx)) return e;
  auto t = j.find("tokens");
  if (t == j.end() || t->is_null())
    return bad_field("tokens", "missing required field 'tokens' (a list of token ids)");
  if (!t->is_array())
    return bad_field("tokens",
                     fmt::format("'tokens' must be a list of token ids, got {}", t->type_name()));
  std::vector<int> ids;
  ids.reserve(t->size());
  for (std::size_t i = 0; i < t->size(); ++i) {
    const json& v = (*t)[i];
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > (1 << 30))
      return bad_field("tokens", fmt::format("'tokens[{}]' must be a token id (an integer >= 0), "
                                             "got {}",
                                             i, brief_json(v)));
    ids.push_back(v.get<int>());
  }
  const TextCodec& codec = codec_of(ctx);
  if (auto e = codec.check_ids(ids, "tokens")) return e;
  std::string bytes;  // joined before the UTF-8 check: a character may span tokens
  for (int id : ids) bytes += codec.id_text(id);
  *answer = {{"prompt", valid_utf8(bytes)}};
  return std::nullopt;
}

using Handler = std::optional<ApiError> (*)(const ServerContext&, const json&, json*);

void serve(const ServerContext& ctx, Handler h, const httplib::Request& req,
           httplib::Response& res) {
  json j, answer;
  std::optional<ApiError> e = parse_json_object(req.body, "the request body", &j);
  if (!e) e = h(ctx, j, &answer);
  if (e) return send_error(res, *e, ErrorStyle::kOpenAI);
  res.set_content(answer.dump(), "application/json");
}

}  // namespace

void add_tokenize_routes(httplib::Server& svr, ServerContext* ctx) {
  svr.Post("/tokenize", [ctx](const httplib::Request& req, httplib::Response& res) {
    serve(*ctx, tokenize, req, res);
  });
  svr.Post("/detokenize", [ctx](const httplib::Request& req, httplib::Response& res) {
    serve(*ctx, detokenize, req, res);
  });
}

}  // namespace prima::server
