// Request bodies and ResponseReader for OpenAI completions/chat and TGI, streaming and not,
// including server errors, usage, prima's timing object and chunk-level token counting.
#include "loadgen/api.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace prima::loadgen {
namespace {

using nlohmann::json;

PlannedRequest planned(int out) {
  PlannedRequest p;
  p.output_tokens = out;
  p.prompt_tokens = 8;
  return p;
}

TEST(Api, EndpointsAndPaths) {
  Endpoint e;
  ASSERT_TRUE(parse_endpoint("chat", &e));
  EXPECT_EQ(endpoint_path(e, true), "/v1/chat/completions");
  ASSERT_TRUE(parse_endpoint("tgi", &e));
  EXPECT_EQ(endpoint_path(e, true), "/generate_stream");
  EXPECT_EQ(endpoint_path(e, false), "/generate");
  ASSERT_TRUE(parse_endpoint("completions", &e));
  EXPECT_EQ(endpoint_path(e, false), "/v1/completions");
  EXPECT_FALSE(parse_endpoint("kserve", &e));
}

TEST(Api, RequestBodies) {
  BodyOptions o;
  o.model = "m";
  json c = json::parse(request_body(Endpoint::kCompletions, o, "hi", planned(7)));
  EXPECT_EQ(c["model"], "m");
  EXPECT_EQ(c["prompt"], "hi");
  EXPECT_EQ(c["max_tokens"], 7);
  EXPECT_EQ(c["stream"], true);
  EXPECT_EQ(c["stream_options"]["include_usage"], true);
  EXPECT_FALSE(c.contains("priority"));
  o.stream = false;
  json ch = json::parse(request_body(Endpoint::kChat, o, "hi", planned(3)));
  EXPECT_EQ(ch["messages"][0]["role"], "user");
  EXPECT_EQ(ch["messages"][0]["content"], "hi");
  EXPECT_FALSE(ch.contains("stream_options"));
  PlannedRequest q = planned(5);
  q.send_qos = true;
  q.priority = Priority::kHigh;
  q.sla_s = 0.5;
  json t = json::parse(request_body(Endpoint::kTgi, o, "hi", q));
  EXPECT_EQ(t["inputs"], "hi");
  EXPECT_EQ(t["parameters"]["max_new_tokens"], 5);
  EXPECT_EQ(t["parameters"]["priority"], "high");
  EXPECT_EQ(t["parameters"]["sla"], 0.5);
  EXPECT_FALSE(t.contains("model"));
  // Extra fields (prima bench --temperature/--top-p/--top-k/--extra-body): top level for
  // OpenAI, into "parameters" for TGI; they win over the benchmark's own.
  o.extra = json{{"temperature", 0}, {"seed", 7}, {"max_tokens", 2}};
  json e = json::parse(request_body(Endpoint::kCompletions, o, "hi", planned(9)));
  EXPECT_EQ(e["temperature"], 0);
  EXPECT_EQ(e["seed"], 7);
  EXPECT_EQ(e["max_tokens"], 2);
  json et = json::parse(request_body(Endpoint::kTgi, o, "hi", planned(9)));
  EXPECT_EQ(et["parameters"]["temperature"], 0);
  EXPECT_EQ(et["parameters"]["seed"], 7);
  EXPECT_FALSE(et.contains("temperature"));
}

TEST(Api, OpenAiCompletionStream) {
  ResponseReader r(Endpoint::kCompletions, true);
  auto chunk = [](const std::string& text, const json& finish) {
    return json{
        {"choices", json::array({json{{"index", 0}, {"text", text}, {"finish_reason", finish}}})}}
        .dump();
  };
  r.on_event(chunk(" a", nullptr), 1.0);
  r.on_event(chunk(" b", nullptr), 1.5);
  r.on_event(chunk(" c", nullptr), 1.75);
  json last = json::parse(chunk("", "length"));
  last["prima"] = {{"ttft_s", 0.2}, {"e2e_s", 0.9}, {"queue_s", 0.01}};
  r.on_event(last.dump(), 1.8);
  r.on_event(
      json{{"choices", json::array()}, {"usage", {{"prompt_tokens", 8}, {"completion_tokens", 3}}}}
          .dump(),
      1.8);
  EXPECT_FALSE(r.done_marker());
  r.on_event("[DONE]", 1.9);
  EXPECT_TRUE(r.done_marker());
  EXPECT_TRUE(r.finished());
  EXPECT_EQ(r.token_events(), 3);  // the finish chunk has empty text: not a token
  EXPECT_DOUBLE_EQ(r.first_token_s(), 1.0);
  ASSERT_EQ(r.itl_s().size(), 2u);
  EXPECT_DOUBLE_EQ(r.itl_s()[0], 0.5);
  EXPECT_DOUBLE_EQ(r.itl_s()[1], 0.25);
  EXPECT_EQ(r.usage_output_tokens(), 3);
  EXPECT_EQ(r.usage_prompt_tokens(), 8);
  EXPECT_TRUE(r.server().has_ttft);
  EXPECT_DOUBLE_EQ(r.server().ttft_s, 0.2);
  EXPECT_DOUBLE_EQ(r.server().queue_s, 0.01);
  EXPECT_TRUE(r.error().empty());
}

TEST(Api, ChatStreamRoleChunkIsNotAToken) {
  ResponseReader r(Endpoint::kChat, true);
  r.on_event(R"({"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]})", 0.5);
  r.on_event(R"({"choices":[{"index":0,"delta":{"content":" x"}}]})", 0.7);
  r.on_event(R"({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})", 0.8);
  r.on_event("[DONE]", 0.8);
  EXPECT_EQ(r.token_events(), 1);
  EXPECT_DOUBLE_EQ(r.first_token_s(), 0.7);
  EXPECT_EQ(r.usage_output_tokens(), -1);  // no usage: the caller counts events
}

TEST(Api, TgiStream) {
  ResponseReader r(Endpoint::kTgi, true);
  r.on_event(R"({"index":1,"token":{"id":0,"text":" the"},"generated_text":null,"details":null})",
             1);
  r.on_event(R"({"index":2,"token":{"id":1,"text":" a"},"generated_text":" the a",
                 "details":{"generated_tokens":2,"prima":{"ttft_s":0.3,"e2e_s":0.4}}})",
             2);
  EXPECT_EQ(r.token_events(), 2);
  EXPECT_TRUE(r.finished());
  EXPECT_EQ(r.usage_output_tokens(), 2);
  EXPECT_DOUBLE_EQ(r.server().e2e_s, 0.4);
  EXPECT_FALSE(r.server().has_queue);
}

TEST(Api, ErrorsInBodiesAndStreams) {
  ResponseReader a(Endpoint::kCompletions, true);
  a.on_event(R"({"error":{"message":"the server shut down","type":"server_error"}})", 1);
  EXPECT_EQ(a.error(), "the server shut down");
  ResponseReader b(Endpoint::kTgi, false);
  b.on_body(R"({"error":"Input validation error","error_type":"validation"})");
  EXPECT_EQ(b.error(), "Input validation error");
  ResponseReader c(Endpoint::kChat, false);
  c.on_body("<html>502</html>");
  EXPECT_NE(c.error().find("unparsable"), std::string::npos);
  ResponseReader d(Endpoint::kCompletions, true);
  d.on_event("not json", 1);
  EXPECT_NE(d.error().find("unparsable stream event"), std::string::npos);
}

TEST(Api, NonStreamingBodies) {
  ResponseReader r(Endpoint::kCompletions, false);
  r.on_body(R"({"choices":[{"text":" a b","finish_reason":"length"}],
               "usage":{"prompt_tokens":4,"completion_tokens":2},"prima":{"ttft_s":0.1,"e2e_s":0.2,"queue_s":0}})");
  EXPECT_TRUE(r.finished());
  EXPECT_EQ(r.usage_output_tokens(), 2);
  EXPECT_EQ(r.usage_prompt_tokens(), 4);
  EXPECT_TRUE(r.server().has_queue);
  ResponseReader t(Endpoint::kTgi, false);
  t.on_body(R"({"generated_text":" a","details":{"generated_tokens":1}})");
  EXPECT_EQ(t.usage_output_tokens(), 1);
  ResponseReader bad(Endpoint::kTgi, false);
  bad.on_body(R"({"text":"?"})");
  EXPECT_FALSE(bad.error().empty());
}

}  // namespace
}  // namespace prima::loadgen
