// KServe v2 (Open Inference Protocol, as Triton and tritonclient speak it):
//   GET /v2, GET /v2/health/live, GET /v2/health/ready (503 while draining or while no replica
//   serves); GET /v2/models/{m}[/versions/{v}] (metadata), .../ready, .../config (Triton's model
//   configuration); POST /v2/models/{m}[/versions/{v}]/infer: the prompt as the BYTES tensor
//   "text_input" (JSON "data", or binary tensor data: kserve_binary.h), optional
//   "parameters": {"max_tokens", "priority", "sla", sampling}; the answer is the BYTES tensor
//   "text_output", in JSON or (asked with "binary_data") as binary data.
// The model has one version, "1". Errors are {"error": message}: an unknown model or version
// is 404; wrong tensor names, shapes and malformed binary bodies are 400 (kserve_tensors.h).
#include <fmt/format.h>

#include "server/json_body.h"
#include "server/kserve_binary.h"
#include "server/kserve_tensors.h"
#include "server/routes.h"

namespace prima::server {
namespace {

using nlohmann::json;

// Route patterns: {m} and, for the versioned form, {v} as capture groups 1 and 2.
constexpr const char* kModel = R"(/v2/models/([^/]+))";
constexpr const char* kVersioned = R"(/v2/models/([^/]+)/versions/([^/]+))";

// Checks the model (and version, when the path has one); else answers 404 and returns false.
bool known_model(ServerContext* ctx, const httplib::Request& req, httplib::Response& res) {
  const std::string m = req.matches.size() > 1 ? req.matches[1].str() : "";
  ApiError e;
  e.status = 404;
  e.type = "not_found_error";
  if (m != ctx->model.name) {
    e.message =
        fmt::format("model '{}' is not served here; this server serves '{}'", m, ctx->model.name);
    send_error(res, e, ErrorStyle::kKServe);
    return false;
  }
  const std::string v = req.matches.size() > 2 ? req.matches[2].str() : kKServeVersion;
  if (v != kKServeVersion) {
    e.message = fmt::format("model '{}' has no version '{}'; its versions are [\"{}\"]", m, v,
                            kKServeVersion);
    send_error(res, e, ErrorStyle::kKServe);
    return false;
  }
  return true;
}

void send_json(httplib::Response& res, const json& j) {
  res.set_content(j.dump(), "application/json");
}

// The inference request's JSON: the body, or (binary tensor data) its JSON header with the
// inputs' binary data moved into "data".
std::optional<ApiError> read_infer_request(const httplib::Request& req, json* out) {
  std::string_view body = req.body;
  std::string_view binary;
  const bool binary_body = req.has_header(kInferHeaderLength);
  if (binary_body) {
    BinaryBody parts;
    if (auto e = split_binary_body(body, req.get_header_value(kInferHeaderLength), &parts))
      return e;
    body = parts.json;
    binary = parts.binary;
  }
  if (auto e = parse_json_object(
          body, binary_body ? "the JSON inference header" : "the request body", out))
    return e;
  return inline_binary_inputs(out, binary);
}

void infer(ServerContext* ctx, const httplib::Request& req, httplib::Response& res) {
  if (!known_model(ctx, req, res)) return;
  json request;
  InferOutputs outputs;
  std::optional<ApiError> err = read_infer_request(req, &request);
  if (!err) err = check_infer_tensors(&request, &outputs);
  ParsedRequest p;
  if (!err) err = parse_request(ApiKind::kKServe, request.dump(), ctx->model, ctx->limits, &p);
  if (err) return send_error(res, *err, ErrorStyle::kKServe);
  auto sub = admit_and_submit(*ctx, p, res, ErrorStyle::kKServe);
  if (!sub) return;
  std::vector<StreamToken> toks;
  const StreamEnd e = wait_for_end(*ctx, *sub, &toks);
  if (auto end_err = end_error(e)) return send_error(res, *end_err, ErrorStyle::kKServe);
  json req_id = std::to_string(sub->id);
  if (auto id = request.find("id"); id != request.end() && id->is_string()) req_id = *id;
  json out{{"name", kTextOutput},
           {"datatype", "BYTES"},
           {"shape", json::array({1})},
           {"data", json::array({output_text(toks, e)})}};
  json body{{"model_name", ctx->model.name},
            {"model_version", kKServeVersion},
            {"id", req_id},
            {"outputs", json::array({out})},
            {"parameters",
             {{"prompt_tokens", e.prompt_tokens},
              {"generated_tokens", e.output_tokens},
              {"finish_reason", e.finish_reason}}},
            {"prima", timing_json(e)}};
  set_timing_headers(res, e);
  if (!outputs.binary) return send_json(res, body);
  std::size_t header_bytes = 0;
  std::string content = encode_binary_outputs(std::move(body), {true}, &header_bytes);
  res.set_header(kInferHeaderLength, std::to_string(header_bytes));
  res.set_content(std::move(content), "application/octet-stream");
}

}  // namespace

void add_kserve_routes(httplib::Server& svr, ServerContext* ctx) {
  svr.Get("/v2/health/live", [](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"live", true}});
  });
  svr.Get("/v2/health/ready", [ctx](const httplib::Request&, httplib::Response& res) {
    const bool ready = ctx->ready();
    res.status = ready ? 200 : 503;
    send_json(res, {{"ready", ready}});
  });
  svr.Get("/v2", [](const httplib::Request&, httplib::Response& res) {
    send_json(res, {{"name", "prima"},
                    {"version", "0.1.0"},
                    {"extensions", json::array({"binary_tensor_data", "model_configuration"})}});
  });
  for (const std::string base : {kModel, kVersioned}) {
    svr.Get(base, [ctx](const httplib::Request& req, httplib::Response& res) {
      if (!known_model(ctx, req, res)) return;
      send_json(res, kserve_model_metadata(ctx->model.name, ctx->backend));
    });
    svr.Get(base + "/ready", [ctx](const httplib::Request& req, httplib::Response& res) {
      if (!known_model(ctx, req, res)) return;
      const bool ready = ctx->ready();
      res.status = ready ? 200 : 503;
      send_json(res, {{"name", ctx->model.name}, {"ready", ready}});
    });
    svr.Get(base + "/config", [ctx](const httplib::Request& req, httplib::Response& res) {
      if (!known_model(ctx, req, res)) return;
      send_json(res, kserve_model_config(ctx->model.name, ctx->backend, ctx->model.max_model_len));
    });
    svr.Post(base + "/infer",
             [ctx](const httplib::Request& req, httplib::Response& res) { infer(ctx, req, res); });
  }
}

}  // namespace prima::server
