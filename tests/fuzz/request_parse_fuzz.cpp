// libFuzzer target for the HTTP request parsers: the input is a request body, parsed for each
// API (OpenAI completions, chat and responses, TGI, KServe v2) against a synthetic served model (no
// tokenizer: server/text_codec.h's synthetic codec). Beyond "no crash, no sanitizer report":
//  - a refused body is a 4xx whose message is not empty and whose error body, in the API's
//    own shape, is valid JSON (an error that cannot be written would be a 500);
//  - an accepted body is a request the engine can take: a prompt of at least one token,
//    1 <= max_tokens <= the limit, prompt + output within the model's context, and the
//    prompt's ids (when given) as many as its tokens.
// Any violation aborts with what was wrong.
// Single-threaded (libFuzzer calls it from one thread).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "server/api_error.h"
#include "server/request_parse.h"

namespace {

using prima::server::ApiError;
using prima::server::ApiKind;
using prima::server::ErrorStyle;

[[noreturn]] void fail(const char* kind, const std::string& what) {
  std::fprintf(stderr, "request_parse_fuzz (%s): %s\n", kind, what.c_str());
  std::abort();
}

struct Api {
  ApiKind kind;
  ErrorStyle style;
  const char* name;
};
constexpr Api kApis[] = {{ApiKind::kCompletion, ErrorStyle::kOpenAI, "completion"},
                         {ApiKind::kChat, ErrorStyle::kOpenAI, "chat"},
                         {ApiKind::kTgi, ErrorStyle::kTgi, "tgi"},
                         {ApiKind::kKServe, ErrorStyle::kKServe, "kserve"},
                         {ApiKind::kResponses, ErrorStyle::kOpenAI, "responses"}};

void check_error(const Api& api, const ApiError& e) {
  if (e.status < 400 || e.status > 499)
    fail(api.name, "status " + std::to_string(e.status) + " for a client's body: " + e.message);
  if (e.message.empty()) fail(api.name, "an error without a message");
  std::string body;
  try {
    body = prima::server::error_body(e, api.style);
  } catch (const std::exception& x) {
    fail(api.name, std::string("the error body cannot be written: ") + x.what());
  }
  if (!nlohmann::json::accept(body)) fail(api.name, "the error body is not JSON: " + body);
}

void check_request(const Api& api, const prima::server::ParsedRequest& p, int max_model_len,
                   int cap) {
  const auto& g = p.gen;
  if (g.prompt_tokens < 1) fail(api.name, "accepted an empty prompt");
  if (g.max_tokens < 1 || g.max_tokens > cap)
    fail(api.name,
         "max_tokens " + std::to_string(g.max_tokens) + " outside 1.." + std::to_string(cap));
  if (static_cast<long long>(g.prompt_tokens) + g.max_tokens > max_model_len)
    fail(api.name, "prompt + max_tokens over the context: " + std::to_string(g.prompt_tokens) +
                       " + " + std::to_string(g.max_tokens));
  if (!g.prompt_ids.empty() && static_cast<int>(g.prompt_ids.size()) != g.prompt_tokens)
    fail(api.name, "prompt ids and prompt_tokens disagree");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  prima::server::ModelInfo model;
  model.name = "fuzz-model";  // the corpus's requests name this model
  model.max_model_len = 4096;
  prima::server::ParseLimits limits;
  limits.default_max_tokens = 16;
  limits.max_tokens_cap = 1024;
  for (const Api& api : kApis) {
    prima::server::ParsedRequest p;
    if (api.kind == ApiKind::kKServe) p.model = model.name;  // the model named in the path
    std::optional<ApiError> e;
    try {
      e = prima::server::parse_request(api.kind, body, model, limits, &p);
    } catch (const std::exception& x) {  // the handler would turn it into a 500
      fail(api.name, std::string("parse_request threw: ") + x.what());
    }
    if (e)
      check_error(api, *e);
    else
      check_request(api, p, model.max_model_len, limits.max_tokens_cap);
  }
  (void)prima::server::parse_or_null(body);  // documented never to throw
  return 0;
}
