#include "engine/workload/trace.h"

#include <gtest/gtest.h>

#include <limits>
#include <sstream>

#include "tests/engine/workload/workload_test_util.h"

namespace prima::workload {
namespace {

using testing::data_dir;
using testing::run_open;
using testing::spec_from;

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string error_of(TraceFormat f, const std::string& file) {
  auto r = read_trace(f, data_dir() + "/" + file);
  EXPECT_FALSE(r.ok()) << file << " should be rejected";
  return r.ok() ? "" : r.status().message();
}

TEST(TraceTimestamp, ParsesDatesAndSeconds) {
  std::int64_t w;
  double f;
  ASSERT_TRUE(parse_timestamp("1970-01-02 00:00:01", &w, &f));
  EXPECT_EQ(w, 86401);
  EXPECT_EQ(f, 0);
  ASSERT_TRUE(parse_timestamp("2023-11-16 18:15:46.6805900", &w, &f));
  EXPECT_EQ(w, 1700158546);
  EXPECT_NEAR(f, 0.68059, 1e-12);
  ASSERT_TRUE(parse_timestamp("2024-02-29T23:59:59.123456789123", &w, &f));
  EXPECT_EQ(w, 1709251199);
  EXPECT_NEAR(f, 0.123456789123, 1e-12);
  ASSERT_TRUE(parse_timestamp("12.75", &w, &f));
  EXPECT_EQ(w, 12);
  EXPECT_DOUBLE_EQ(f, 0.75);
  for (const char* bad : {"", "abc", "2023-11-16", "2023-11-16 18:15", "2023-13-01 00:00:00",
                          "2023-11-16 18:15:46.", "2023-11-16 18:15:46.5x", "-3"})
    EXPECT_FALSE(parse_timestamp(bad, &w, &f)) << bad;
}

TEST(TraceAzureCsv, ReadsRowsRelativeToFirst) {
  auto r = read_trace(TraceFormat::kAzureCsv, data_dir() + "/azure_small.csv");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 5u);
  EXPECT_EQ((*r)[0].arrival_s, 0);
  EXPECT_NEAR((*r)[1].arrival_s, 4.314579, 1e-9);
  EXPECT_NEAR((*r)[2].arrival_s, 4.61941, 1e-9);
  EXPECT_NEAR((*r)[3].arrival_s, 13.31941, 1e-9);
  EXPECT_NEAR((*r)[4].arrival_s, 20654.81941, 1e-9);
  EXPECT_EQ((*r)[0].prompt_tokens, 374);
  EXPECT_EQ((*r)[0].output_tokens, 44);
  EXPECT_EQ((*r)[3].output_tokens, 0);
  EXPECT_EQ((*r)[0].priority, -1);
}

TEST(TraceAzureCsv, PlainSecondsCrlfAndBlankLines) {
  auto r = read_trace(TraceFormat::kAzureCsv, data_dir() + "/seconds_crlf.csv");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 3u);
  EXPECT_DOUBLE_EQ((*r)[1].arrival_s, 0.75);
  EXPECT_DOUBLE_EQ((*r)[2].arrival_s, 2.5);
  EXPECT_EQ((*r)[2].output_tokens, 60);
}

TEST(TraceAzureCsv, BadRowsNameFileLineAndField) {
  EXPECT_NE(error_of(TraceFormat::kAzureCsv, "bad_generated.csv")
                .find("bad_generated.csv:3: GeneratedTokens: expected a non-negative integer, "
                      "got \"abc\""),
            std::string::npos);
  EXPECT_NE(error_of(TraceFormat::kAzureCsv, "bad_timestamp.csv")
                .find("bad_timestamp.csv:3: TIMESTAMP: expected"),
            std::string::npos);
  EXPECT_NE(error_of(TraceFormat::kAzureCsv, "bad_header.csv").find("bad_header.csv:1: "),
            std::string::npos);
  EXPECT_NE(error_of(TraceFormat::kAzureCsv, "backwards.csv").find("backwards.csv:3: "),
            std::string::npos);
  std::istringstream cols("TIMESTAMP,ContextTokens,GeneratedTokens\n1,2\n");
  auto r = parse_azure_csv(cols, "x.csv");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("x.csv:2: expected 3 comma-separated columns"),
            std::string::npos);
  std::istringstream header_only("TIMESTAMP,ContextTokens,GeneratedTokens\n");
  EXPECT_FALSE(parse_azure_csv(header_only, "h.csv").ok());
}

TEST(TraceFile, MissingFileIsAClearError) {
  std::string e = error_of(TraceFormat::kAzureCsv, "no_such_trace.csv");
  EXPECT_NE(e.find("no_such_trace.csv: cannot open the trace file"), std::string::npos) << e;
}

TEST(TraceJsonl, ReadsRecordsWithPriorityAndSla) {
  auto r = read_trace(TraceFormat::kJsonl, data_dir() + "/small.jsonl");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_EQ((*r)[1].priority, static_cast<int>(Priority::kHigh));
  EXPECT_DOUBLE_EQ((*r)[1].sla_s, 0.2);
  EXPECT_EQ((*r)[2].priority, static_cast<int>(Priority::kLow));
  EXPECT_DOUBLE_EQ((*r)[2].sla_s, -1);
  EXPECT_DOUBLE_EQ((*r)[3].sla_s, 5);
  EXPECT_EQ((*r)[3].prompt_tokens, 400);
  auto ts = read_trace(TraceFormat::kJsonl, data_dir() + "/timestamps.jsonl");
  ASSERT_TRUE(ts.ok()) << ts.status().message();
  EXPECT_DOUBLE_EQ((*ts)[0].arrival_s, 0);
  EXPECT_DOUBLE_EQ((*ts)[1].arrival_s, 1.5);
}

TEST(TraceJsonl, BadLinesNameFileLineAndField) {
  std::string e = error_of(TraceFormat::kJsonl, "bad_field.jsonl");
  EXPECT_NE(e.find("bad_field.jsonl:2: /prompt_tokens: expected"), std::string::npos) << e;
  e = error_of(TraceFormat::kJsonl, "unknown_key.jsonl");
  EXPECT_NE(e.find("unknown_key.jsonl:1: /promt: unknown field"), std::string::npos) << e;
  e = error_of(TraceFormat::kJsonl, "malformed.jsonl");
  EXPECT_NE(e.find("malformed.jsonl:2: malformed JSON"), std::string::npos) << e;
  std::istringstream mixed(
      "{\"arrival_s\": 1, \"prompt_tokens\": 1, \"output_tokens\": 1}\n"
      "{\"timestamp\": 2, \"prompt_tokens\": 1, \"output_tokens\": 1}\n");
  auto r = parse_jsonl(mixed, "m.jsonl");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("m.jsonl:2: "), std::string::npos);
  std::istringstream bad_prio(
      "{\"arrival_s\": 1, \"prompt_tokens\": 1, \"output_tokens\": 1, \"priority\": \"urgent\"}");
  r = parse_jsonl(bad_prio, "p.jsonl");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("p.jsonl:1: /priority: expected one of high, normal, low"),
            std::string::npos)
      << r.status().message();
}

TEST(TraceMooncake, ReadsMillisecondsLengthsAndBlockIds) {
  std::istringstream in(
      "{\"timestamp\": 27482, \"input_length\": 1024, \"output_length\": 5, "
      "\"hash_ids\": [1, 2]}\n"
      "\n"
      "{\"timestamp\": 29000, \"input_length\": 1500, \"output_length\": 9, "
      "\"hash_ids\": [1, 2, 3]}\n");
  auto r = parse_mooncake(in, "m.jsonl");
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->size(), 2u);
  EXPECT_DOUBLE_EQ((*r)[0].arrival_s, 0);
  EXPECT_DOUBLE_EQ((*r)[1].arrival_s, 1.518);
  EXPECT_EQ((*r)[1].prompt_tokens, 1500);
  EXPECT_EQ((*r)[1].output_tokens, 9);
  ASSERT_TRUE((*r)[1].block_hashes);
  EXPECT_EQ(*(*r)[1].block_hashes, (std::vector<std::uint64_t>{1, 2, 3}));
  EXPECT_EQ((*r)[1].hash_block_tokens, kMooncakeBlockTokens);
}

TEST(TraceMooncake, BadLinesNameFileLineAndField) {
  auto error = [](const std::string& text) {
    std::istringstream in(text);
    auto r = parse_mooncake(in, "m.jsonl");
    EXPECT_FALSE(r.ok()) << text;
    return r.ok() ? std::string() : r.status().message();
  };
  EXPECT_NE(error("{\"timestamp\": 1, \"input_length\": 10, \"output_length\": 1}")
                .find("m.jsonl:1: /hash_ids: missing required field"),
            std::string::npos);
  EXPECT_NE(error("{\"timestamp\": 1, \"input_length\": 600, \"output_length\": 1, "
                  "\"hash_ids\": [1, 2, 3]}")
                .find("/hash_ids: 3 block ids for 600 input tokens (at most 2 blocks of 512)"),
            std::string::npos);
  EXPECT_NE(error("{\"timestamp\": 1, \"input_length\": 600, \"output_length\": 1, "
                  "\"hash_ids\": [1, \"x\"]}")
                .find("/hash_ids/1: expected a block id"),
            std::string::npos);
  EXPECT_NE(error("{\"timestamp\": 5, \"input_length\": 1, \"output_length\": 1, "
                  "\"hash_ids\": []}\n{\"timestamp\": 4, \"input_length\": 1, "
                  "\"output_length\": 1, \"hash_ids\": []}")
                .find("m.jsonl:2: arrival goes back in time"),
            std::string::npos);
  EXPECT_NE(error("{\"timestamp\": 1, \"input_len\": 1, \"output_length\": 1, "
                  "\"hash_ids\": []}")
                .find("/input_length: missing required field"),
            std::string::npos);
}

TEST(TraceReplay, DriverReplaysScalesAndLoops) {
  auto rs = run_open(spec_from(R"({"arrival": {"type": "trace", "format": "jsonl",
    "path": "small.jsonl"}, "sla": {"normal": "2s"}})"),
                     1, kInf);
  ASSERT_EQ(rs.size(), 4u);
  EXPECT_DOUBLE_EQ(rs[1].arrival_s, 0.5);
  EXPECT_EQ(rs[1].priority, Priority::kHigh);
  EXPECT_DOUBLE_EQ(rs[1].sla_s, 0.2);
  EXPECT_EQ(rs[0].priority, Priority::kNormal);  // from the default mix
  EXPECT_DOUBLE_EQ(rs[0].sla_s, 2);              // the class's SLA
  EXPECT_EQ(rs[2].output_tokens, 30);

  rs = run_open(spec_from(R"({"arrival": {"type": "trace", "format": "jsonl",
    "path": "small.jsonl", "time_scale": 2}})"),
                1, kInf);
  EXPECT_DOUBLE_EQ(rs[3].arrival_s, 6);

  // Recorded mean rate: 3 gaps over 3 s = 1 rps; rescaled to 4 rps.
  rs = run_open(spec_from(R"({"arrival": {"type": "trace", "format": "jsonl",
    "path": "small.jsonl", "rate_rps": 4}})"),
                1, kInf);
  EXPECT_DOUBLE_EQ(rs[3].arrival_s, 0.75);

  // Looping: period = span + one mean gap = 4 s; stops at the duration.
  rs = run_open(spec_from(R"({"arrival": {"type": "trace", "format": "jsonl",
    "path": "small.jsonl", "loop": true}})"),
                1, 10.0);
  ASSERT_EQ(rs.size(), 10u);  // 0 .5 2 3 | 4 4.5 6 7 | 8 8.5 (10 is past the end)
  EXPECT_DOUBLE_EQ(rs[4].arrival_s, 4);
  EXPECT_DOUBLE_EQ(rs[9].arrival_s, 8.5);
}

TEST(TraceReplay, BadFileFailsMakeWorkload) {
  auto spec = spec_from(R"({"arrival": {"type": "trace", "format": "azure_csv",
    "path": "bad_generated.csv"}})");
  auto d = make_workload(spec, 1, kInf);
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("bad_generated.csv:3: GeneratedTokens"), std::string::npos);
}

}  // namespace
}  // namespace prima::workload
