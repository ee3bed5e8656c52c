// OpenAI's Responses API for text: POST /v1/responses with "input" (a string or a list of
// message items), "instructions", "max_output_tokens", "temperature", "top_p" and "stream";
// what else the API has (tools, files, images, reasoning, stored responses) is refused with a
// 400 naming the field (request_parse.cpp, parse_responses). The answer is a Response object
// with one assistant message of one output_text part; "status" is "completed", or
// "incomplete" with incomplete_details.reason "max_output_tokens" when the output hit its
// limit. Streaming sends the spec's typed events (`event: <type>` then `data: {...}`):
// response.created, response.in_progress, response.output_item.added,
// response.content_part.added, response.output_text.delta per token, response.output_text.done,
// response.content_part.done, response.output_item.done, then response.completed (or
// response.incomplete, or an "error" event). Responses are not stored: GET
// /v1/responses/{id} answers 404 saying so.
#include <fmt/format.h>

#include <chrono>

#include "server/json_body.h"
#include "server/routes.h"
#include "server/sse.h"
#include "server/text_decoder.h"

namespace prima::server {
namespace {

using nlohmann::json;

// What the answer echoes from the request (the spec's Response fields).
struct Echo {
  std::string id, msg_id, model;
  std::int64_t created = 0;
  json instructions = nullptr, max_output_tokens = nullptr, metadata = json::object();
  double temperature = 1.0, top_p = 1.0;
};

Echo echo_of(const ParsedRequest& p, const std::string& body) {
  Echo e;
  e.id = unique_id("resp_");
  e.msg_id = unique_id("msg_");
  e.model = p.model;
  e.created = std::chrono::duration_cast<std::chrono::seconds>(
                  std::chrono::system_clock::now().time_since_epoch())
                  .count();
  const json j = parse_or_null(body);  // parsed once already: an object
  if (j.is_object()) {
    e.instructions = j.value("instructions", json(nullptr));
    e.max_output_tokens = j.value("max_output_tokens", json(nullptr));
    if (j.contains("metadata") && j.at("metadata").is_object()) e.metadata = j.at("metadata");
  }
  e.temperature = p.gen.sampling.temperature;
  e.top_p = p.gen.sampling.top_p;
  return e;
}

json text_part(const std::string& text) {
  return {{"type", "output_text"},
          {"text", text},
          {"annotations", json::array()},
          {"logprobs", json::array()}};
}

json message_item(const Echo& x, const char* status, const json& content) {
  return {{"id", x.msg_id},
          {"type", "message"},
          {"status", status},
          {"role", "assistant"},
          {"content", content}};
}

// The Response object. `end`: the finished request (null while in progress).
json response_json(const Echo& x, const std::string& text, const StreamEnd* end) {
  const bool cut = end && end->finish_reason == "length";
  const char* status = !end ? "in_progress" : cut ? "incomplete" : "completed";
  json output = json::array();
  if (end) output.push_back(message_item(x, status, json::array({text_part(text)})));
  json usage = nullptr;
  if (end)
    usage = {{"input_tokens", end->prompt_tokens},
             {"input_tokens_details", {{"cached_tokens", 0}}},
             {"output_tokens", end->output_tokens},
             {"output_tokens_details", {{"reasoning_tokens", 0}}},
             {"total_tokens", end->prompt_tokens + end->output_tokens}};
  json r{{"id", x.id},
         {"object", "response"},
         {"created_at", x.created},
         {"status", status},
         {"error", nullptr},
         {"incomplete_details", cut ? json{{"reason", "max_output_tokens"}} : json(nullptr)},
         {"instructions", x.instructions},
         {"max_output_tokens", x.max_output_tokens},
         {"model", x.model},
         {"output", std::move(output)},
         {"parallel_tool_calls", false},
         {"previous_response_id", nullptr},
         {"reasoning", {{"effort", nullptr}, {"summary", nullptr}}},
         {"store", false},
         {"temperature", x.temperature},
         {"text", {{"format", {{"type", "text"}}}}},
         {"tool_choice", "none"},
         {"tools", json::array()},
         {"top_p", x.top_p},
         {"truncation", "disabled"},
         {"usage", std::move(usage)},
         {"user", nullptr},
         {"metadata", x.metadata}};
  if (end) r["prima"] = timing_json(*end);
  return r;
}

class ResponsesFormatter : public StreamFormatter {
 public:
  explicit ResponsesFormatter(Echo x) : x_(std::move(x)) {}

  std::string open() override {
    const json r = response_json(x_, "", nullptr);
    // One after another: each event takes the next sequence number.
    std::string out = event("response.created", {{"response", r}});
    out += event("response.in_progress", {{"response", r}});
    out += event("response.output_item.added",
                 {{"output_index", 0}, {"item", message_item(x_, "in_progress", json::array())}});
    out += event("response.content_part.added", part_fields({{"part", text_part("")}}));
    return out;
  }
  std::string tokens(const std::vector<StreamToken>& toks) override {
    std::string out;
    for (const auto& t : toks) {
      text_ += t.text;
      if (!t.text.empty())
        out += event("response.output_text.delta",
                     part_fields({{"delta", t.text}, {"logprobs", json::array()}}));
    }
    return out;
  }
  std::string close(const StreamEnd& e) override {
    if (auto err = end_error(e))
      return event("error", {{"code", err->code.empty() ? err->type : err->code},
                             {"message", err->message},
                             {"param", err->param.empty() ? json(nullptr) : json(err->param)}});
    std::string out;
    if (!e.tail_text.empty()) {
      text_ += e.tail_text;
      out += event("response.output_text.delta",
                   part_fields({{"delta", e.tail_text}, {"logprobs", json::array()}}));
    }
    const json done = response_json(x_, text_, &e);
    out += event("response.output_text.done",
                 part_fields({{"text", text_}, {"logprobs", json::array()}}));
    out += event("response.content_part.done", part_fields({{"part", text_part(text_)}}));
    out += event("response.output_item.done",
                 {{"output_index", 0}, {"item", done.at("output").at(0)}});
    const bool cut = e.finish_reason == "length";
    return out + event(cut ? "response.incomplete" : "response.completed", {{"response", done}});
  }

 private:
  json part_fields(json j) const {
    j["item_id"] = x_.msg_id;
    j["output_index"] = 0;
    j["content_index"] = 0;
    return j;
  }
  // "event: <type>" and the data, which carries its type and the sequence number.
  std::string event(const char* type, json data) {
    data["type"] = type;
    data["sequence_number"] = seq_++;
    return fmt::format("event: {}\n", type) + sse_data(data.dump());
  }

  Echo x_;
  std::string text_;
  int seq_ = 0;
};

void respond(ServerContext* ctx, const httplib::Request& req, httplib::Response& res) {
  ParsedRequest p;
  if (auto e = parse_request(ApiKind::kResponses, req.body, ctx->model, ctx->limits, &p))
    return send_error(res, *e, ErrorStyle::kOpenAI);
  auto sub = admit_and_submit(*ctx, p, res, ErrorStyle::kOpenAI);
  if (!sub) return;
  Echo x = echo_of(p, req.body);
  set_request_id(res, x.id);
  if (p.stream)
    return stream_sse(res, ctx->bridge, std::move(*sub),
                      std::make_unique<ResponsesFormatter>(std::move(x)));
  std::vector<StreamToken> toks;
  const StreamEnd e = wait_for_end(*ctx, *sub, &toks);
  if (auto err = end_error(e)) return send_error(res, *err, ErrorStyle::kOpenAI);
  set_timing_headers(res, e);
  res.set_content(response_json(x, valid_utf8(output_text(toks, e)), &e).dump(),
                  "application/json");
}

}  // namespace

void add_responses_routes(httplib::Server& svr, ServerContext* ctx) {
  svr.Post("/v1/responses",
           [ctx](const httplib::Request& req, httplib::Response& res) { respond(ctx, req, res); });
  svr.Get(R"(/v1/responses/([^/]+))", [](const httplib::Request& req, httplib::Response& res) {
    ApiError e;
    e.status = 404;
    e.type = "invalid_request_error";
    e.code = "response_not_found";
    e.message = fmt::format(
        "response '{}' not found: this server does not store responses (send store: false)",
        req.matches[1].str());
    send_error(res, e, ErrorStyle::kOpenAI);
  });
}

}  // namespace prima::server
