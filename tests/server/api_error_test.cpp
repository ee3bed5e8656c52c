// Error bodies in each API's shape: the style a path belongs to (new routes included), and
// TGI's error_type taken from the status (the text-generation client maps "validation",
// "overloaded" and "generation" to its exceptions).
#include "server/api_error.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace prima::server {
namespace {

using nlohmann::json;

TEST(ApiError, EachPathHasItsApisStyle) {
  for (const char* p : {"/v2", "/v2/models/m/versions/1/infer", "/v2/models/m/config"})
    EXPECT_EQ(style_for_path(p), ErrorStyle::kKServe) << p;
  for (const char* p : {"/", "/info", "/generate", "/generate_stream"})
    EXPECT_EQ(style_for_path(p), ErrorStyle::kTgi) << p;
  for (const char* p : {"/v1/completions", "/v1/models/x/y", "/tokenize", "/detokenize", "/v2x",
                        "/informed", "/nothing"})
    EXPECT_EQ(style_for_path(p), ErrorStyle::kOpenAI) << p;
}

TEST(ApiError, TgiErrorTypesComeFromTheStatus) {
  const std::pair<int, const char*> cases[] = {
      {400, "validation"},     {413, "validation"}, {422, "validation"},
      {429, "overloaded"},     {503, "overloaded"}, {500, "generation"},
      {401, "authentication"}, {404, "not_found"},  {405, "invalid_request"}};
  for (const auto& [status, type] : cases) {
    ApiError e = bad_field("x", "bad x");
    e.status = status;
    const json body = json::parse(error_body(e, ErrorStyle::kTgi));
    EXPECT_EQ(body, json({{"error", "bad x"}, {"error_type", type}})) << status;
  }
}

TEST(ApiError, KServeAndOpenAIShapes) {
  ApiError e = bad_field("inputs[0].name", "wrong name");
  EXPECT_EQ(json::parse(error_body(e, ErrorStyle::kKServe)), json({{"error", "wrong name"}}));
  const json o = json::parse(error_body(e, ErrorStyle::kOpenAI));
  EXPECT_EQ(o["error"]["message"], "wrong name");
  EXPECT_EQ(o["error"]["param"], "inputs[0].name");
  EXPECT_EQ(o["error"]["type"], "invalid_request_error");
  EXPECT_TRUE(o["error"]["code"].is_null());
}

}  // namespace
}  // namespace prima::server
