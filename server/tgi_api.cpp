// Text Generation Inference API: POST / (TGI's compat route, what the text-generation client
// posts to: /generate_stream when the body has "stream": true, else /generate with the answer
// in a list), GET /info (the served model and limits, TGI's Info schema), POST /generate
// ({"inputs", "parameters": {"max_new_tokens", "details"}} -> {"generated_text"}) and POST
// /generate_stream (server-sent events, one per token: {"index", "token": {"id", "text", "logprob",
// "special"}, "generated_text", "details"}; the last one carries the whole text and the details).
// Token ids are the model's (real backend), or the synthetic word's index in simulation.
// "details": true gives TGI's Details (finish_reason, generated_tokens, seed, prefill, tokens
// with logprobs, top_tokens when top_n_tokens > 0); return_full_text prepends the prompt; the
// parameters implemented or refused are in request_fields.h.
#include <fmt/format.h>

#include <algorithm>

#include "server/json_body.h"
#include "server/logprobs_json.h"
#include "server/routes.h"
#include "server/sse.h"

namespace prima::server {
namespace {

using nlohmann::json;

const char* finish_reason(const StreamEnd& e) {
  if (e.finish_reason == "length") return "length";
  return e.stop_sequence ? "stop_sequence" : "eos_token";
}

// The seed, as TGI reports it: only when sampling was on.
json seed_json(const StreamEnd& e) {
  return e.sampled ? json(e.seed) : json(nullptr);
}

json stream_details_json(const StreamEnd& e) {
  return {{"finish_reason", finish_reason(e)},
          {"generated_tokens", e.output_tokens},
          {"seed", seed_json(e)},
          {"input_length", e.prompt_tokens},
          {"prima", timing_json(e)}};
}

// The prompt's tokens for details.prefill (decoder_input_details): the model's ids, pieces
// and log-probabilities (real backend), or the prompt cut as the sim backend counts it (4
// bytes a token, ids 0, 1, ...) with synthetic log-probabilities. The first token has no
// context: its logprob is null, as TGI's.
json prefill_json(const ServerContext& ctx, const ParsedRequest& p,
                  const std::vector<StreamToken>& toks) {
  json out = json::array();
  for (const auto& t : scored_prompt(ctx, p, toks))
    out.push_back({{"id", t.id},
                   {"text", valid_utf8(t.piece)},
                   {"logprob", t.has_logprob ? json(t.logprob) : json(nullptr)}});
  return out;
}

json details_json(const ServerContext& ctx, const ParsedRequest& p,
                  const std::vector<StreamToken>& toks, const StreamEnd& e) {
  json tokens = json::array(), top = json::array();
  for (const auto& t : toks) {
    tokens.push_back(tgi_token(t, t.piece));
    if (p.top_n_tokens > 0) top.push_back(tgi_top_tokens(t));
  }
  json d{{"finish_reason", finish_reason(e)},
         {"generated_tokens", e.output_tokens},
         {"seed", seed_json(e)},
         {"prefill", p.decoder_input_details ? prefill_json(ctx, p, toks) : json::array()},
         {"tokens", std::move(tokens)},
         {"prima", timing_json(e)}};
  if (p.top_n_tokens > 0) d["top_tokens"] = std::move(top);
  return d;
}

class TgiFormatter : public StreamFormatter {
 public:
  explicit TgiFormatter(const ParsedRequest& p)
      : top_n_(p.top_n_tokens), prefix_(p.return_full_text ? p.prompt_text : "") {}
  std::string tokens(const std::vector<StreamToken>& toks) override {
    std::string out;
    for (const auto& t : toks) {
      if (held_) out += sse_data(event(*held_, held_->text, nullptr, nullptr).dump());
      held_ = t;  // the last token is sent by close() with the full text
      text_ += t.text;
    }
    return out;
  }
  std::string close(const StreamEnd& e) override {
    if (auto err = end_error(e)) return sse_data(error_body(*err, ErrorStyle::kTgi));
    if (!held_) return "";
    return sse_data(event(*held_, held_->text + e.tail_text,
                          valid_utf8(prefix_ + text_ + e.tail_text), stream_details_json(e))
                        .dump());
  }

 private:
  json event(const StreamToken& t, const std::string& token_text, const json& text,
             const json& details) const {
    return {{"index", t.index + 1},
            {"token", tgi_token(t, token_text)},
            {"top_tokens", top_n_ > 0 ? tgi_top_tokens(t) : json(nullptr)},
            {"generated_text", text},
            {"details", details}};
  }
  int top_n_;
  std::string prefix_;  // return_full_text: the prompt
  std::optional<StreamToken> held_;
  std::string text_;  // everything so far
};

void generate(ServerContext* ctx, bool stream, const httplib::Request& req,
              httplib::Response& res) {
  ParsedRequest p;
  if (auto e = parse_request(ApiKind::kTgi, req.body, ctx->model, ctx->limits, &p))
    return send_error(res, *e, ErrorStyle::kTgi);
  auto sub = admit_and_submit(*ctx, p, res, ErrorStyle::kTgi);
  if (!sub) return;
  if (stream)
    return stream_sse(res, ctx->bridge, std::move(*sub), std::make_unique<TgiFormatter>(p));
  std::vector<StreamToken> toks;
  const StreamEnd e = wait_for_end(*ctx, *sub, &toks);
  if (auto err = end_error(e)) return send_error(res, *err, ErrorStyle::kTgi);
  const std::string prefix = p.return_full_text ? p.prompt_text : "";
  json body{{"generated_text", valid_utf8(prefix + output_text(toks, e))}};
  if (p.details) body["details"] = details_json(*ctx, p, toks, e);
  set_timing_headers(res, e);
  res.set_header("x-generated-tokens", std::to_string(e.output_tokens));
  res.set_header("x-prompt-tokens", std::to_string(e.prompt_tokens));
  res.set_content(body.dump(), "application/json");
}

// POST /: "stream" (a boolean, default false) picks the route; TGI answers the non-streaming
// form as a list of one generation, as the Hugging Face inference API does.
void compat_generate(ServerContext* ctx, const httplib::Request& req, httplib::Response& res) {
  json j;
  bool stream = false;
  if (!parse_json_object(req.body, "the request body", &j)) {  // else generate() names the error
    auto e = field_errors([&] {
      stream = config::JsonReader::request_body(j).boolean("stream", false);
      return std::optional<ApiError>();
    });
    if (e) return send_error(res, *e, ErrorStyle::kTgi);
  }
  generate(ctx, stream, req, res);
  if (!stream && res.status < 300) res.set_content("[" + res.body + "]", "application/json");
}

// GET /info: TGI's Info. prima validates and tokenizes each request on its own HTTP thread
// (validation_workers: as many as requests admitted at once); best_of and batched prompts
// are not offered (max_best_of, max_client_batch_size: 1).
json info_json(const ServerContext& ctx) {
  const int total = ctx.model.max_model_len;
  return {{"model_id", ctx.model.name},
          {"model_sha", nullptr},
          {"model_pipeline_tag", "text-generation"},
          {"max_concurrent_requests", ctx.guard->capacity()},
          {"max_best_of", 1},
          {"max_stop_sequences", 16},
          {"max_input_tokens", total > 0 ? total - 1 : 0},
          {"max_input_length", total > 0 ? total - 1 : 0},
          {"max_total_tokens", total},
          {"validation_workers", ctx.guard->capacity()},
          {"max_client_batch_size", 1},
          {"router", "prima"},
          {"version", "0.1.0"},
          {"sha", nullptr},
          {"docker_label", nullptr},
          {"backend", ctx.backend}};
}

}  // namespace

void add_tgi_routes(httplib::Server& svr, ServerContext* ctx) {
  svr.Post("/generate", [ctx](const httplib::Request& req, httplib::Response& res) {
    generate(ctx, false, req, res);
  });
  svr.Post("/generate_stream", [ctx](const httplib::Request& req, httplib::Response& res) {
    generate(ctx, true, req, res);
  });
  svr.Post("/", [ctx](const httplib::Request& req, httplib::Response& res) {
    compat_generate(ctx, req, res);
  });
  svr.Get("/info", [ctx](const httplib::Request&, httplib::Response& res) {
    res.set_content(info_json(*ctx).dump(), "application/json");
  });
}

}  // namespace prima::server
