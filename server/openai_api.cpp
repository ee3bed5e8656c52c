// OpenAI API: POST /v1/completions, POST /v1/chat/completions (JSON, or server-sent events
// with "stream": true: chunks in OpenAI's schema, stream_options.include_usage, then
// `data: [DONE]`), GET /v1/models. Responses carry the request's engine-time timings: the
// x-prima-sim-* headers (non-streaming) and a "prima" object (the body, or the last chunk) that
// also holds the sampling seed used. Log-probabilities (logprobs, top_logprobs) and echo in
// OpenAI's shapes (logprobs_json.h); the fields refused are in request_fields.h.
// GET /v1/models/{id}: the served model, or 404 (code "model_not_found") for any other id.
// vLLM's POST /tokenize and /detokenize: tokenize_api.cpp.
#include <fmt/format.h>

#include <chrono>

#include "server/logprobs_json.h"
#include "server/routes.h"
#include "server/sse.h"

namespace prima::server {
namespace {

using nlohmann::json;

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

json model_json(const ServerContext& ctx, const std::string& name) {
  return {{"id", name},
          {"object", "model"},
          {"created", ctx.model.created},
          {"owned_by", "prima"},
          {"max_model_len", ctx.model.max_model_len}};
}

json usage_json(int prompt_tokens, int output_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", output_tokens},
          {"total_tokens", prompt_tokens + output_tokens}};
}

// The tokens an answer reports: none for a scoring request (max_tokens 0: the one token
// sampled is not part of the answer).
int reported_tokens(const ParsedRequest& p, const StreamEnd& e) {
  return p.score_only ? 0 : e.output_tokens;
}

// A choice's "logprobs": null unless the request asked (ParsedRequest; logprobs_json.h).
// Completions with echo list the prompt's tokens first (`prompt`: from the first token).
json choice_logprobs(bool chat, const ParsedRequest& p, const std::vector<StreamToken>& prompt,
                     const std::vector<StreamToken>& toks, std::size_t* offset) {
  if (p.gen.sampling.logprobs < 0) return nullptr;
  if (chat) return chat_logprobs(toks);
  if (prompt.empty()) return completion_logprobs(toks, offset);
  std::vector<StreamToken> all = prompt;
  all.insert(all.end(), toks.begin(), toks.end());
  return completion_logprobs(all, offset);
}

// The "prima" object: timings, and the sampling seed used (drawn by the server when the
// request gave none), so that a sampled answer can be reproduced.
json prima_json(const StreamEnd& e) {
  json j = timing_json(e);
  j["seed"] = e.seed;
  return j;
}

class OpenAIFormatter : public StreamFormatter {
 public:
  OpenAIFormatter(bool chat, std::string id, const ParsedRequest& p, const ServerContext& ctx)
      : chat_(chat), id_(std::move(id)), model_(p.model), p_(p), ctx_(ctx) {}

  std::string open() override {
    if (chat_)
      return sse_data(
          chunk({{"role", "assistant"}, {"content", valid_utf8(p_.chat_echo)}}, nullptr).dump());
    // echo: the prompt comes first (with its scores, it waits for the first token).
    if (!p_.echo || p_.gen.sampling.prompt_logprobs >= 0) return "";
    return echo_chunk({});
  }
  std::string tokens(const std::vector<StreamToken>& toks) override {
    std::string out;
    for (const auto& t : toks) {
      if (t.index == 0 && p_.echo && p_.gen.sampling.prompt_logprobs >= 0)
        out += echo_chunk(scored_prompt(ctx_, p_, {t}));
      if (p_.score_only) continue;
      ++sent_;
      const std::string& text = t.text;
      json c = chat_ ? chunk({{"content", text}}, nullptr) : chunk(text, nullptr);
      if (p_.gen.sampling.logprobs >= 0)
        c["choices"][0]["logprobs"] = choice_logprobs(chat_, p_, {}, {t}, &offset_);
      out += sse_data(c.dump());
    }
    return out;
  }
  std::string close(const StreamEnd& e) override {
    std::string out;
    if (!e.tail_text.empty() && e.outcome == Outcome::kCompleted && !p_.score_only)
      out += sse_data(
          (chat_ ? chunk({{"content", e.tail_text}}, nullptr) : chunk(e.tail_text, nullptr))
              .dump());
    if (auto err = end_error(e)) {
      out += sse_data(json::parse(error_body(*err, ErrorStyle::kOpenAI)).dump());
    } else {
      sent_ = reported_tokens(p_, e);
      json last = chat_ ? chunk(json::object(), e.finish_reason) : chunk("", e.finish_reason);
      last["prima"] = prima_json(e);
      out += sse_data(last.dump());
      if (p_.include_usage) {
        json u = base();
        u["choices"] = json::array();
        u["usage"] = usage_json(e.prompt_tokens, sent_);
        out += sse_data(u.dump());
      }
    }
    return out + sse_data("[DONE]");
  }

 private:
  std::string echo_chunk(const std::vector<StreamToken>& prompt) {
    json c = chunk(valid_utf8(p_.prompt_text), nullptr);
    if (!prompt.empty())
      c["choices"][0]["logprobs"] = completion_logprobs(prompt, &offset_);
    else
      offset_ = utf8_length(valid_utf8(p_.prompt_text));
    return sse_data(c.dump());
  }
  json base() const {
    json j{{"id", id_},
           {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
           {"created", created_},
           {"model", model_}};
    // continuous_usage_stats: every chunk carries the usage so far; include_usage alone: null
    // until the usage chunk at the end.
    if (p_.continuous_usage)
      j["usage"] = usage_json(p_.gen.prompt_tokens, sent_);
    else if (p_.include_usage)
      j["usage"] = nullptr;
    return j;
  }
  // A chunk with one choice: a chat delta, or a completion's text.
  json chunk(const json& delta_or_text, const json& finish) const {
    json c{{"index", 0}, {"finish_reason", finish}};
    if (chat_)
      c["delta"] = delta_or_text;
    else {
      c["text"] = delta_or_text;
    }
    c["logprobs"] = nullptr;
    json j = base();
    j["choices"] = json::array({c});
    return j;
  }

  bool chat_;
  std::string id_, model_;
  ParsedRequest p_;
  const ServerContext& ctx_;
  int sent_ = 0;            // completion tokens sent so far
  std::size_t offset_ = 0;  // completions logprobs: text_offset of the next token
  std::int64_t created_ = unix_now();
};

void generate(ServerContext* ctx, ApiKind kind, const httplib::Request& req,
              httplib::Response& res) {
  ParsedRequest p;
  if (auto e = parse_request(kind, req.body, ctx->model, ctx->limits, &p))
    return send_error(res, *e, ErrorStyle::kOpenAI);
  auto sub = admit_and_submit(*ctx, p, res, ErrorStyle::kOpenAI);
  if (!sub) return;
  const bool chat = kind == ApiKind::kChat;
  const std::string id = unique_id(chat ? "chatcmpl-" : "cmpl-");
  set_request_id(res, id);
  if (p.stream)
    return stream_sse(res, ctx->bridge, std::move(*sub),
                      std::make_unique<OpenAIFormatter>(chat, id, p, *ctx));
  std::vector<StreamToken> toks;
  const StreamEnd e = wait_for_end(*ctx, *sub, &toks);
  if (auto err = end_error(e)) return send_error(res, *err, ErrorStyle::kOpenAI);
  const std::string prompt = p.echo ? valid_utf8(p.prompt_text) : "";
  const std::vector<StreamToken> scored = scored_prompt(*ctx, p, toks);
  std::size_t offset = scored.empty() ? utf8_length(prompt) : 0;
  const std::string text = p.score_only ? "" : output_text(toks, e);
  if (p.score_only) toks.clear();
  json choice{{"index", 0},
              {"finish_reason", e.finish_reason},
              {"logprobs", choice_logprobs(chat, p, scored, toks, &offset)}};
  if (chat)
    choice["message"] = {{"role", "assistant"}, {"content", valid_utf8(p.chat_echo) + text}};
  else
    choice["text"] = prompt + text;
  json body{{"id", id},
            {"object", chat ? "chat.completion" : "text_completion"},
            {"created", unix_now()},
            {"model", p.model},
            {"choices", json::array({choice})},
            {"usage", usage_json(e.prompt_tokens, reported_tokens(p, e))},
            {"prima", prima_json(e)}};
  set_timing_headers(res, e);
  res.set_content(body.dump(), "application/json");
}

}  // namespace

void add_openai_routes(httplib::Server& svr, ServerContext* ctx) {
  svr.Post("/v1/completions", [ctx](const httplib::Request& req, httplib::Response& res) {
    generate(ctx, ApiKind::kCompletion, req, res);
  });
  svr.Post("/v1/chat/completions", [ctx](const httplib::Request& req, httplib::Response& res) {
    generate(ctx, ApiKind::kChat, req, res);
  });
  svr.Get("/v1/models", [ctx](const httplib::Request&, httplib::Response& res) {
    // Every name the model is served under (--served-model-name), the first its own.
    json data = json::array({model_json(*ctx, ctx->model.name)});
    for (const auto& alias : ctx->model.aliases) data.push_back(model_json(*ctx, alias));
    res.set_content(json{{"object", "list"}, {"data", std::move(data)}}.dump(), "application/json");
  });
  // Model ids may hold '/' ("org/name"): the id is the rest of the path.
  svr.Get(R"(/v1/models/(.+))", [ctx](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1].str();
    if (served_name(ctx->model, id))
      return res.set_content(model_json(*ctx, id).dump(), "application/json");
    send_error(res, model_not_found(id, ctx->model.name), ErrorStyle::kOpenAI);
  });
  add_tokenize_routes(svr, ctx);
}

}  // namespace prima::server
