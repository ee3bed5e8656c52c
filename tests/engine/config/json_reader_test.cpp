#include "engine/config/json_reader.h"

#include <gtest/gtest.h>

namespace prima::config {
namespace {

TEST(JsonReader, ReadsFieldsAndRejectsUnknown) {
  Json j = Json::parse(R"({"a": 3, "b": "x", "typo": 1})");
  JsonReader r(j, "f.json");
  EXPECT_EQ(r.positive_integer("a"), 3);
  EXPECT_EQ(r.string("b"), "x");
  try {
    r.finish();
    FAIL() << "expected an error";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("f.json: /typo: unknown field"), std::string::npos)
        << e.what();
  }
}

TEST(JsonReader, TypeErrorsNameFileAndPath) {
  Json j = Json::parse(R"({"d": {"tp": "four"}})");
  JsonReader r(j, "s.json");
  try {
    r.object("d").positive_integer("tp");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(), "s.json: /d/tp: expected a positive integer, got string \"four\"");
  }
}

TEST(JsonReader, Units) {
  double v;
  ASSERT_TRUE(parse_duration_s("200ms", &v));
  EXPECT_DOUBLE_EQ(v, 0.2);
  ASSERT_TRUE(parse_bytes("80GB", &v));
  EXPECT_DOUBLE_EQ(v, 80e9);
  ASSERT_TRUE(parse_bytes("1GiB", &v));
  EXPECT_DOUBLE_EQ(v, 1073741824.0);
  ASSERT_TRUE(parse_bandwidth_Bps("200Gbps", &v));
  EXPECT_DOUBLE_EQ(v, 25e9);
  ASSERT_TRUE(parse_bandwidth_Bps("200Gb/s", &v));
  EXPECT_DOUBLE_EQ(v, 25e9);
  ASSERT_TRUE(parse_bandwidth_Bps("25GB/s", &v));
  EXPECT_DOUBLE_EQ(v, 25e9);
  EXPECT_FALSE(parse_duration_s("fast", &v));
  EXPECT_FALSE(parse_bytes("12 parsecs", &v));
}

TEST(JsonReader, MalformedJsonNamesLine) {
  auto r = parse_json_text("{\n  \"a\": 1,\n  \"b\": }\n", "bad.json");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("bad.json:3:"), std::string::npos) << r.status().message();
}

TEST(JsonReader, BriefValuesNeverDumpContainers) {
  EXPECT_EQ(brief(Json(7)), "7");
  EXPECT_EQ(brief(Json("x")), "\"x\"");
  EXPECT_EQ(brief(Json::array({1, 2})), "array");
  EXPECT_EQ(brief(Json::object()), "object");
  EXPECT_EQ(brief(Json(std::string(100, 'y'))).size(), 40u);
}

// The request-body dialect: dotted paths, "'PATH' must be X, got V", strict booleans, the
// field on the error; the config dialect keeps its words.
TEST(JsonReader, RequestBodyDialect) {
  const Json j = Json::parse(
      R"({"stream": 1, "parameters": {"stop": ["a", 2]}, "messages": [{"role": 3}], "n": 1e30})");
  const JsonReader r = JsonReader::request_body(j);
  auto error_of = [](const auto& read) {
    try {
      read();
    } catch (const ConfigError& e) {
      return std::make_pair(e.field(), std::string(e.what()));
    }
    return std::make_pair(std::string("-"), std::string("no error"));
  };
  using P = std::pair<std::string, std::string>;
  EXPECT_EQ(error_of([&] { r.boolean("stream", false); }),
            P("stream", "'stream' must be a boolean, got 1"));
  EXPECT_EQ(error_of([&] { r.object("parameters").strings("stop"); }),
            P("parameters.stop[1]", "'parameters.stop[1]' must be a string, got 2"));
  EXPECT_EQ(error_of([&] { r.objects("messages")[0].string("role"); }),
            P("messages[0].role", "'messages[0].role' must be a string, got 3"));
  EXPECT_EQ(error_of([&] { r.objects("messages")[0].string("content"); }),
            P("messages[0].content", "missing required field 'messages[0].content'"));
  EXPECT_EQ(error_of([&] { r.optional_integer("n"); }),
            P("n", "'n' must be an integer, got 1e+30"));
  EXPECT_EQ(error_of([&] { r.fail("n", "must be 1"); }), P("n", "'n' must be 1"));
  EXPECT_FALSE(r.optional_number("absent"));
  const Json c = Json::parse(R"({"on": 1, "big": 18446744073709551615})");
  const JsonReader cr(c, "c.json");
  EXPECT_TRUE(cr.boolean("on", false));  // config files may say 0 or 1
  EXPECT_EQ(error_of([&] { cr.integer("big"); }),
            P("/big", "c.json: /big: expected an integer below 2^63, got 18446744073709551615"));
}

}  // namespace
}  // namespace prima::config
