// Bounded JSON bodies: objects parse, anything else (invalid JSON, invalid UTF-8, a number
// out of range, a non-object, nesting past config::kMaxJsonDepth) is a 400 saying why; a
// field the reader refuses is a 400 naming it.
#include "server/json_body.h"

#include <gtest/gtest.h>

#include "engine/config/json_parse.h"

namespace prima::server {
namespace {

using nlohmann::json;

TEST(JsonBody, ObjectsParse) {
  json j;
  ASSERT_FALSE(parse_json_object(R"({"a": [1, {"b": "c"}]})", "the body", &j));
  EXPECT_EQ(j["a"][1]["b"], "c");
}

TEST(JsonBody, EverythingElseIsA400SayingWhy) {
  json j;
  const std::pair<std::string, std::string> cases[] = {
      {"{", "not valid JSON"},
      {"{\"a\": \"\xff\"}", "not valid JSON"},
      {"{\"a\": 1e400}", "not valid JSON"},
      {"[1]", "must be a JSON object, got array"},
      {"\"s\"", "must be a JSON object, got string"},
  };
  for (const auto& [body, want] : cases) {
    auto e = parse_json_object(body, "the body", &j);
    ASSERT_TRUE(e) << body;
    EXPECT_EQ(e->status, 400);
    EXPECT_NE(e->message.find(want), std::string::npos) << e->message;
    EXPECT_EQ(e->message.rfind("the body", 0), 0u) << e->message;
  }
}

TEST(JsonBody, NestingIsCappedWhileParsing) {
  json j;
  auto nested = [](int depth) {
    return "{\"a\":" + std::string(depth - 1, '[') + std::string(depth - 1, ']') + "}";
  };
  EXPECT_FALSE(parse_json_object(nested(config::kMaxJsonDepth), "the body", &j));
  auto e = parse_json_object(nested(config::kMaxJsonDepth + 1), "the body", &j);
  ASSERT_TRUE(e);
  EXPECT_NE(e->message.find("deeper than 64 levels"), std::string::npos) << e->message;
  // 200,000 levels: refused at level 65, no stack overflow.
  e = parse_json_object(nested(200000), "the body", &j);
  ASSERT_TRUE(e);
}

TEST(JsonBody, FieldErrorsAreBadRequestsNamingTheField) {
  const json body = json::parse(R"({"parameters": {"top_k": "ten"}})");
  auto e = field_errors([&]() -> std::optional<ApiError> {
    config::JsonReader::request_body(body).object("parameters").integer("top_k");
    return std::nullopt;
  });
  ASSERT_TRUE(e);
  EXPECT_EQ(e->status, 400);
  EXPECT_EQ(e->param, "parameters.top_k");
  EXPECT_EQ(e->message, "'parameters.top_k' must be an integer, got \"ten\"");
  EXPECT_FALSE(field_errors([] { return std::optional<ApiError>(); }));
}

}  // namespace
}  // namespace prima::server
