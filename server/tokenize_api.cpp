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

using config::JsonReader;
using nlohmann::json;

// "model" is optional (vLLM's tokenizer requests); when given it must be a served name.
std::optional<ApiError> check_model(const JsonReader& r, const ServerContext& ctx) {
  const std::string model = r.string("model", ctx.model.name);
  if (served_name(ctx.model, model)) return std::nullopt;
  return model_not_found(model, ctx.model.name);
}

// An optional boolean that only `allowed` may take: the other value would tokenize
// differently from how the engine runs the prompt. Returns its value (else `allowed`).
bool fixed_bool(const JsonReader& r, const char* key, bool allowed, const char* why) {
  const bool v = r.boolean(key, allowed);
  if (v != allowed) r.fail(key, fmt::format("must be {} ({})", allowed, why));
  return v;
}

std::optional<ApiError> tokenize(const ServerContext& ctx, const JsonReader& r, json* answer) {
  if (auto e = check_model(r, ctx)) return e;
  const bool has_prompt = r.has("prompt");
  const bool has_messages = r.has("messages");
  if (has_prompt == has_messages)
    return bad_field(has_prompt ? "messages" : "prompt",
                     has_prompt ? "send either 'prompt' or 'messages', not both"
                                : "missing 'prompt' (a string) or 'messages' (a list of chat "
                                  "messages)");
  for (const char* key : {"chat_template", "chat_template_kwargs", "tools", "mm_processor_kwargs"})
    if (r.has(key))
      r.fail(key,
             "is not supported: prompts are rendered with the model's own chat template, as chat "
             "completions are");
  fixed_bool(r, "add_special_tokens", true,
             "the engine adds the model's special tokens to every prompt");
  fixed_bool(r, "add_generation_prompt", true,
             "chat completions always end with the assistant's turn");
  fixed_bool(r, "continue_final_message", false,
             "chat completions always start a new assistant turn");
  const bool strs = r.boolean("return_token_strs", false);
  const TextCodec& codec = codec_of(ctx.model);
  GenRequest g;
  if (has_prompt) {
    codec.encode(r.string("prompt"), &g);
  } else if (auto e = encode_chat_messages(r.json(), ctx.model, &g)) {
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

std::optional<ApiError> detokenize(const ServerContext& ctx, const JsonReader& r, json* answer) {
  if (auto e = check_model(r, ctx)) return e;
  if (!r.has("tokens"))
    return bad_field("tokens", "missing required field 'tokens' (a list of token ids)");
  const json& t = r.value("tokens");
  if (!t.is_array()) r.fail_type("tokens", "a list of token ids", t);
  std::vector<int> ids;
  ids.reserve(t.size());
  for (std::size_t i = 0; i < t.size(); ++i) {
    const json& v = t[i];
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > (1 << 30))
      return bad_field("tokens", fmt::format("'tokens[{}]' must be a token id (an integer >= 0), "
                                             "got {}",
                                             i, config::brief(v)));
    ids.push_back(v.get<int>());
  }
  const TextCodec& codec = codec_of(ctx.model);
  if (auto e = codec.check_ids(ids, "tokens")) return e;
  std::string bytes;  // joined before the UTF-8 check: a character may span tokens
  for (int id : ids) bytes += codec.id_text(id);
  *answer = {{"prompt", valid_utf8(bytes)}};
  return std::nullopt;
}

using Handler = std::optional<ApiError> (*)(const ServerContext&, const JsonReader&, json*);

void serve(const ServerContext& ctx, Handler h, const httplib::Request& req,
           httplib::Response& res) {
  json j, answer;
  std::optional<ApiError> e = parse_json_object(req.body, "the request body", &j);
  if (!e) e = field_errors([&] { return h(ctx, JsonReader::request_body(j), &answer); });
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
