// Bounded JSON parsing: the nesting cap holds while parsing (a text far deeper than the stack
// could take is refused, not built), errors name the line and column, and messages that
// quote bytes that are not UTF-8 stay writable.
#include "engine/config/json_parse.h"

#include <gtest/gtest.h>

#include <string>

namespace prima::config {
namespace {

TEST(JsonParse, ParsesOrdinaryTextUpToTheCap) {
  JsonParseError e;
  auto j = parse_json(R"({"a": [1, {"b": "x[{"}], "c": null})", &e);
  ASSERT_TRUE(j) << e.message;
  EXPECT_EQ((*j)["a"][1]["b"], "x[{");  // brackets inside strings do not count
  // Exactly max_depth levels parse; one more does not.
  EXPECT_TRUE(parse_json(std::string(4, '[') + std::string(4, ']'), &e, 4));
  EXPECT_FALSE(parse_json(std::string(5, '[') + std::string(5, ']'), &e, 4));
  EXPECT_TRUE(e.too_deep);
  EXPECT_EQ(e.byte, 4u);  // the fifth '['
}

TEST(JsonParse, RefusesDeepNestingWithoutRecursing) {
  // 1,000,000 levels: would overflow the stack when copied, compared or dumped.
  const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  JsonParseError e;
  EXPECT_FALSE(parse_json(deep, &e));
  EXPECT_TRUE(e.too_deep);
  EXPECT_EQ(e.byte, static_cast<std::size_t>(kMaxJsonDepth));
  EXPECT_NE(e.message.find("deeper than 64 levels"), std::string::npos) << e.message;
  // Objects count as well, with escaped quotes in keys skipped correctly by the locator.
  std::string objs;
  for (int i = 0; i < 100; ++i) objs += R"({"k\"":)";
  EXPECT_FALSE(parse_json(objs + "1" + std::string(100, '}'), &e));
  EXPECT_TRUE(e.too_deep);
  EXPECT_EQ(e.column, 64u * 7 + 1);  // 1-based column of the 65th '{'
}

TEST(JsonParse, SyntaxErrorsNameLineAndColumn) {
  JsonParseError e;
  EXPECT_FALSE(parse_json("{\n  \"a\": 1,\n  \"b\": ,\n}", &e));
  EXPECT_FALSE(e.too_deep);
  EXPECT_EQ(e.line, 3u);
  EXPECT_NE(describe(e).find("line 3, column"), std::string::npos) << describe(e);
  EXPECT_FALSE(parse_json("1e400", &e));  // a number overflow is an error, not an exception
  EXPECT_FALSE(parse_json("", &e));
}

TEST(JsonParse, MessagesQuotingInvalidUtf8AreValidUtf8) {
  JsonParseError e;
  EXPECT_FALSE(parse_json("{\"prompt\": \"\xff\xfe\"}", &e));
  const nlohmann::json j = e.message;
  EXPECT_NO_THROW((void)j.dump());  // strict dump throws on invalid UTF-8
  EXPECT_NE(e.message.find("\xEF\xBF\xBD"), std::string::npos) << e.message;
}

TEST(JsonParse, SanitizeUtf8KeepsValidTextAndReplacesEachBadByte) {
  EXPECT_EQ(sanitize_utf8("h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80"),
            "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80");
  EXPECT_EQ(sanitize_utf8("a\xC3"), "a\xEF\xBF\xBD");                // truncated sequence
  EXPECT_EQ(sanitize_utf8("\xC0\xAF"), "\xEF\xBF\xBD\xEF\xBF\xBD");  // overlong '/'
  EXPECT_EQ(sanitize_utf8("\xED\xA0\x80"),
            "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");         // a UTF-16 surrogate
  EXPECT_EQ(sanitize_utf8("\xF4\x90\x80\x80").size(), 12u);  // above U+10FFFF
}

}  // namespace
}  // namespace prima::config
