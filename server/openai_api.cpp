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

json model_json(const ServerContext& ctx) {
  return {{"id", ctx.model.name},
          {"object", "model"},
          {"created", ctx.model.created},
          {"owned_by", "prima"},
          {"max_model_len", ctx.model.max_model_len}};
}

json usage_json(const StreamEnd& e) {
  return {{"prompt_tokens", e.prompt_tokens},
          {"completion_tokens", e.output_tokens},
          {"total_tokens", e.prompt_tokens + e.output_tokens}};
}

// A choice's "logprobs": null unless the request asked (ParsedRequest; logprobs_json.h).
json choice_logprobs(bool chat, const ParsedRequest& p, const std::vector<StreamToken>& toks,
                     std::size_t* offset) {
  if (p.gen.sampling.logprobs < 0) return nullptr;
  return chat ? chat_logprobs(toks) : completion_logprobs(toks, offset);
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
  OpenAIFormatter(bool chat, std::string id, const ParsedRequest& p)
      : chat_(chat), id_(std::move(id)), model_(p.model), usage_(p.include_usage), p_(p) {}

  std::string open() override {
    if (!chat_) {  // echo: the prompt comes first
      if (!p_.echo) return "";
      offset_ = utf8_length(valid_utf8(p_.prompt_text));
      return sse_data(chunk(valid_utf8(p_.prompt_text), nullptr).dump());
    }
    return sse_data(chunk({{"role", "assistant"}, {"content", ""}}, nullptr).dump());
  }
  std::string tokens(const std::vector<StreamToken>& toks) override {
    std::string out;
    for (const auto& t : toks) {
      const std::string& text = t.text;
      json c = chat_ ? chunk({{"content", text}}, nullptr) : chunk(text, nullptr);
      if (p_.gen.sampling.logprobs >= 0)
        c["choices"][0]["logprobs"] = choice_logprobs(chat_, p_, {t}, &offset_);
      out += sse_data(c.dump());
    }
    return out;
  }
  std::string close(const StreamEnd& e) override {
    std::string out;
    if (!e.tail_text.empty() && e.outcome == Outcome::kCompleted)
      out += sse_data(
          (chat_ ? chunk({{"content", e.tail_text}}, nullptr) : chunk(e.tail_text, nullptr))
              .dump());
    if (auto err = end_error(e)) {
      out += sse_data(json::parse(error_body(*err, ErrorStyle::kOpenAI)).dump());
    } else {
      json last = chat_ ? chunk(json::object(), e.finish_reason) : chunk("", e.finish_reason);
      last["prima"] = prima_json(e);
      out += sse_data(last.dump());
      if (usage_) {
        json u = base();
        u["choices"] = json::array();
        u["usage"] = usage_json(e);
        out += sse_data(u.dump());
      }
    }
    return out + sse_data("[DONE]");
  }

 private:
  json base() const {
    json j{{"id", id_},
           {"object", chat_ ? "chat.completion.chunk" : "text_completion"},
           {"created", created_},
           {"model", model_}};
    if (usage_) j["usage"] = nullptr;
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
  bool usage_;
  ParsedRequest p_;
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
  const std::string id = fmt::format("{}-{}", chat ? "chatcmpl" : "cmpl", sub->id);
  res.set_header("x-request-id", id);
  if (p.stream)
    return stream_sse(res, ctx->bridge, std::move(*sub),
                      std::make_unique<OpenAIFormatter>(chat, id, p));
  std::vector<StreamToken> toks;
  const StreamEnd e = wait_for_end(*ctx, *sub, &toks);
  if (auto err = end_error(e)) return send_error(res, *err, ErrorStyle::kOpenAI);
  const std::string prompt = p.echo ? valid_utf8(p.prompt_text) : "";
  std::size_t offset = utf8_length(prompt);
  json choice{{"index", 0},
              {"finish_reason", e.finish_reason},
              {"logprobs", choice_logprobs(chat, p, toks, &offset)}};
  if (chat)
    choice["message"] = {{"role", "assistant"}, {"content", output_text(toks, e)}};
  else
    choice["text"] = prompt + output_text(toks, e);
  json body{{"id", id},
            {"object", chat ? "chat.completion" : "text_completion"},
            {"created", unix_now()},
            {"model", p.model},
            {"choices", json::array({choice})},
            {"usage", usage_json(e)},
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
    res.set_content(json{{"object", "list"}, {"data", json::array({model_json(*ctx)})}}.dump(),
                    "application/json");
  });
  // Model ids may hold '/' ("org/name"): the id is the rest of the path.
  svr.Get(R"(/v1/models/(.+))", [ctx](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1].str();
    if (id == ctx->model.name) return res.set_content(model_json(*ctx).dump(), "application/json");
    send_error(res, model_not_found(id, ctx->model.name), ErrorStyle::kOpenAI);
  });
  add_tokenize_routes(svr, ctx);
}

}  // namespace prima::server
