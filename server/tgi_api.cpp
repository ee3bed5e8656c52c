// Text Generation Inference API: POST /generate ({"inputs", "parameters": {"max_new_tokens",
// "details"}} -> {"generated_text"}) and POST /generate_stream (server-sent events, one per
// token: {"index", "token": {"id", "text", "logprob", "special"}, "generated_text",
// "details"}; the last one carries the whole text and the details). Token ids are the
// model's (real backend), or the synthetic word's index in simulation.
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

}  // namespace

void add_tgi_routes(httplib::Server& svr, ServerContext* ctx) {
  svr.Post("/generate", [ctx](const httplib::Request& req, httplib::Response& res) {
    generate(ctx, false, req, res);
  });
  svr.Post("/generate_stream", [ctx](const httplib::Request& req, httplib::Response& res) {
    generate(ctx, true, req, res);
  });
}

}  // namespace prima::server
