// KServe v2 (Open Inference Protocol): GET /v2/health/live, GET /v2/health/ready (503 while
// draining), GET /v2/models/{m} (metadata), GET /v2/models/{m}/ready, POST
// /v2/models/{m}/infer: the prompt as one BYTES tensor in "inputs", optional
// "parameters": {"max_tokens", "priority", "sla"}; the answer is one BYTES tensor
// "text_output". Errors are {"error": message}; an unknown model is 404.
#include <fmt/format.h>

#include "server/routes.h"

namespace prima::server {
namespace {

using nlohmann::json;

bool known_model(ServerContext* ctx, const httplib::Request& req, httplib::Response& res) {
  const std::string m = req.matches.size() > 1 ? req.matches[1].str() : "";
  if (m == ctx->model.name) return true;
  ApiError e;
  e.status = 404;
  e.message =
      fmt::format("model '{}' is not served here; this server serves '{}'", m, ctx->model.name);
  send_error(res, e, ErrorStyle::kKServe);
  return false;
}

}  // namespace

void add_kserve_routes(httplib::Server& svr, ServerContext* ctx) {
  svr.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(json{{"live", true}}.dump(), "application/json");
  });
  svr.Get("/v2/health/ready", [ctx](const httplib::Request&, httplib::Response& res) {
    const bool ready = !ctx->guard->draining();
    res.status = ready ? 200 : 503;
    res.set_content(json{{"ready", ready}}.dump(), "application/json");
  });
  svr.Get("/v2", [ctx](const httplib::Request&, httplib::Response& res) {
    res.set_content(
        json{{"name", "prima"}, {"version", "0.1.0"}, {"extensions", json::array()}}.dump(),
        "application/json");
  });
  svr.Get(R"(/v2/models/([^/]+))", [ctx](const httplib::Request& req, httplib::Response& res) {
    if (!known_model(ctx, req, res)) return;
    json t_in{{"name", "text_input"}, {"datatype", "BYTES"}, {"shape", json::array({1})}};
    json t_out{{"name", "text_output"}, {"datatype", "BYTES"}, {"shape", json::array({1})}};
    res.set_content(json{{"name", ctx->model.name},
                         {"versions", json::array({"1"})},
                         {"platform", "prima-" + ctx->backend},
                         {"inputs", json::array({t_in})},
                         {"outputs", json::array({t_out})}}
                        .dump(),
                    "application/json");
  });
  svr.Get(R"(/v2/models/([^/]+)/ready)", [ctx](const httplib::Request& req,
                                               httplib::Response& res) {
    if (!known_model(ctx, req, res)) return;
    const bool ready = !ctx->guard->draining();
    res.status = ready ? 200 : 503;
    res.set_content(json{{"name", ctx->model.name}, {"ready", ready}}.dump(), "application/json");
  });
  svr.Post(R"(/v2/models/([^/]+)/infer)",
           [ctx](const httplib::Request& req, httplib::Response& res) {
             if (!known_model(ctx, req, res)) return;
             ParsedRequest p;
             if (auto e = parse_request(ApiKind::kKServe, req.body, ctx->model, ctx->limits, &p))
               return send_error(res, *e, ErrorStyle::kKServe);
             auto sub = admit_and_submit(*ctx, p, res, ErrorStyle::kKServe);
             if (!sub) return;
             std::vector<StreamToken> toks;
             const StreamEnd e = wait_for_end(*ctx, *sub, &toks);
             if (auto err = end_error(e)) return send_error(res, *err, ErrorStyle::kKServe);
             json req_id = nullptr;
             json j = parse_or_null(req.body);
             if (j.is_object() && j.contains("id") && j["id"].is_string()) req_id = j["id"];
             json out{{"name", "text_output"},
                      {"datatype", "BYTES"},
                      {"shape", json::array({1})},
                      {"data", json::array({output_text(toks, e)})}};
             json body{{"model_name", ctx->model.name},
                       {"model_version", "1"},
                       {"id", req_id.is_null() ? json(std::to_string(sub->id)) : req_id},
                       {"outputs", json::array({out})},
                       {"parameters",
                        {{"prompt_tokens", e.prompt_tokens},
                         {"generated_tokens", e.output_tokens},
                         {"finish_reason", e.finish_reason}}},
                       {"prima", timing_json(e)}};
             set_timing_headers(res, e);
             res.set_content(body.dump(), "application/json");
           });
}

}  // namespace prima::server
