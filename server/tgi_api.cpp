// Text Generation Inference API: POST / (TGI's compat route, what the text-generation client
// posts to: /generate_stream when the body has "stream": true, else /generate with the answer
// in a list), GET /info (the served model and limits, TGI's Info schema), POST /generate
// ({"inputs", "parameters": {"max_new_tokens", "details"}} -> {"generated_text"}) and POST
// /generate_stream (server-sent events, one per token: {"index", "token": {"id", "text", "logprob",
// "special"}, "generated_text", "details"}; the last one carries the whole text and the details).
// Token ids are the model's (real backend), or the synthetic word's index in simulation.
#include <fmt/format.h>

#include "server/json_body.h"
#include "server/routes.h"
#include "server/sse.h"

namespace prima::server {
namespace {

using nlohmann::json;

json token_json(const StreamToken& t, const std::string& text) {
  return {{"id", t.id >= 0 ? t.id : t.index % 32},
          {"text", text},
          {"logprob", 0.0},
          {"special", false}};
}

json details_json(const StreamEnd& e) {
  return {{"finish_reason", e.finish_reason == "length" ? "length" : "eos_token"},
          {"generated_tokens", e.output_tokens},
          {"seed", nullptr},
          {"prima", timing_json(e)}};
}

class TgiFormatter : public StreamFormatter {
 public:
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
    return sse_data(
        event(*held_, held_->text + e.tail_text, text_ + e.tail_text, details_json(e)).dump());
  }

 private:
  static json event(const StreamToken& t, const std::string& token_text, const json& text,
                    const json& details) {
    return {{"index", t.index + 1},
            {"token", token_json(t, token_text)},
            {"top_tokens", nullptr},
            {"generated_text", text},
            {"details", details}};
  }
  std::optional<StreamToken> held_;
  std::string text_;  // everything so far
};

void generate(ServerContext* ctx, bool stream, const httplib::Request& req,
              httplib::Response& res) {
  ParsedRequest p;
  if (auto e = parse_request(ApiKind::kTgi, req.body, ctx->model, ctx->limits, &p))
    return send_error(res, *e, ErrorStyle::kTgi);
  bool details = false;
  {
    json j = parse_or_null(req.body);
    if (auto it = j.find("parameters"); it != j.end() && it->is_object())
      if (auto d = it->find("details"); d != it->end() && d->is_boolean()) details = d->get<bool>();
  }
  auto sub = admit_and_submit(*ctx, p, res, ErrorStyle::kTgi);
  if (!sub) return;
  if (stream)
    return stream_sse(res, ctx->bridge, std::move(*sub), std::make_unique<TgiFormatter>());
  std::vector<StreamToken> toks;
  const StreamEnd e = wait_for_end(*ctx, *sub, &toks);
  if (auto err = end_error(e)) return send_error(res, *err, ErrorStyle::kTgi);
  json body{{"generated_text", output_text(toks, e)}};
  if (details) body["details"] = details_json(e);
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
    if (auto s = j.find("stream"); s != j.end() && !s->is_null()) {
      if (!s->is_boolean())
        return send_error(
            res,
            bad_field("stream", fmt::format("'stream' must be a boolean, got {}", brief_json(*s))),
            ErrorStyle::kTgi);
      stream = s->get<bool>();
    }
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
