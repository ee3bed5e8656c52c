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

}  // namespace
}  // namespace prima::config
