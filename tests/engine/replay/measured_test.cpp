// Reading measured runs (engine/replay/measured.h): the three shapes, unit suffixes, what
// counts as measured, the order rules, and every bad input as one message naming the file,
// the line and the field.
#include "engine/replay/measured.h"

#include <gtest/gtest.h>

#include <sstream>

namespace prima::replay {
namespace {

Result<MeasuredRun> parse(const std::string& text, const std::string& name = "m.csv") {
  std::istringstream in(text);
  return parse_measured(in, name);
}

// The error message of a parse that must fail.
std::string error_of(const std::string& text, const std::string& name = "m.csv") {
  auto r = parse(text, name);
  EXPECT_FALSE(r.ok()) << "parsed:\n" << text;
  return r.ok() ? "" : r.status().message();
}

TEST(MeasuredJsonl, ReadsABenchLogWithItsHeader) {
  const std::string text =
      R"({"format": "prima-bench-requests", "version": 1, "url": "http://x", "model": "m"})"
      "\n"
      R"({"id": 0, "arrival_s": 0.5, "prompt_tokens": 100, "output_tokens": 4, "max_tokens": 4, "ok": true, "http_status": 200, "ttft_s": 0.05, "tpot_s": 0.01, "e2e_s": 0.08, "itl_s": [0.01, 0.01, 0.01], "queue_s": 0.002, "due_s": 0.49, "server_ttft_s": 0.04})"
      "\n\n"
      R"({"id": 1, "arrival_s": 0.7, "prompt_tokens": 50, "output_tokens": 1, "max_tokens": 16, "ok": false, "http_status": 503, "ttft_s": null, "tpot_s": null, "e2e_s": null, "itl_s": [], "error": "HTTP 503"})"
      "\n"
      R"({"id": 2, "arrival_s": 0.7, "prompt_tokens": 60, "output_tokens": 1, "ok": true, "ttft_ms": 30, "tpot_s": null, "e2e_ms": 30, "itl_s": []})"
      "\n";
  auto r = parse(text, "run.jsonl");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, MeasuredFormat::kBenchJsonl);
  EXPECT_EQ(r->header["url"], "http://x");
  ASSERT_EQ(r->requests.size(), 3u);
  const auto& a = r->requests[0];
  EXPECT_EQ(a.line, 2);
  EXPECT_EQ(a.id, "0");
  EXPECT_DOUBLE_EQ(a.arrival_s, 0.5);
  EXPECT_EQ(a.prompt_tokens, 100);
  EXPECT_EQ(a.output_tokens, 4);
  EXPECT_TRUE(a.ok);
  EXPECT_DOUBLE_EQ(a.ttft_s, 0.05);
  EXPECT_DOUBLE_EQ(a.tpot_s, 0.01);
  EXPECT_DOUBLE_EQ(a.e2e_s, 0.08);
  EXPECT_DOUBLE_EQ(a.queue_s, 0.002);
  EXPECT_EQ(a.itl_s.size(), 3u);
  // A failed request is replayed with what it asked for; its latencies do not count.
  const auto& b = r->requests[1];
  EXPECT_EQ(b.line, 4);
  EXPECT_FALSE(b.ok);
  EXPECT_EQ(b.output_tokens, 16);
  EXPECT_LT(b.e2e_s, 0);
  // Units in the key names.
  const auto& c = r->requests[2];
  EXPECT_DOUBLE_EQ(c.ttft_s, 0.03);
  EXPECT_DOUBLE_EQ(c.e2e_s, 0.03);
  EXPECT_LT(c.tpot_s, 0);  // one token: no TPOT
}

TEST(MeasuredJsonl, WithoutAHeaderIsPlainJsonl) {
  auto r = parse(R"({"arrival_s": 0, "prompt_tokens": 1, "output_tokens": 2, "e2e_s": 1})", "a");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, MeasuredFormat::kJsonl);
  EXPECT_LT(r->requests[0].ttft_s, 0);  // not measured (no streaming)
}

TEST(MeasuredCsv, SortsASimulateRequestsCsvByArrival) {
  // prima simulate writes requests as they end; a rejected request has zeros and -1s.
  const std::string text =
      "id,priority,replica,outcome,prompt_tokens,output_tokens,preemptions,arrival_s,"
      "first_scheduled_s,first_token_s,finish_s,ttft_s,tpot_s,e2e_s,queue_s,reason\n"
      "2,high,0,completed,10,5,0,0.300000,0.300000,0.310000,0.350000,0.010000,0.010000,"
      "0.050000,0.000000,\"\"\n"
      "1,normal,1,completed,20,1,0,0.100000,0.100000,0.120000,0.120000,0.020000,0.000000,"
      "0.020000,0.000000,\"\"\n"
      "3,low,-1,rejected,5000,10,0,0.300000,-1.000000,-1.000000,0.300000,0.000000,0.000000,"
      "0.000000,0.000000,\"prompt (5000) + output (10) tokens exceed the context limit, 4096\"\n";
  auto r = parse(text);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, MeasuredFormat::kSimulateCsv);
  ASSERT_EQ(r->requests.size(), 3u);
  EXPECT_EQ(r->requests[0].id, "1");
  EXPECT_EQ(r->requests[1].id, "2");  // same arrival as 3: by id
  EXPECT_EQ(r->requests[2].id, "3");
  EXPECT_EQ(r->requests[0].line, 3);
  EXPECT_LT(r->requests[0].tpot_s, 0);  // one token
  EXPECT_EQ(r->requests[1].priority, 0);
  EXPECT_DOUBLE_EQ(r->requests[1].tpot_s, 0.01);
  EXPECT_FALSE(r->requests[2].ok);
  EXPECT_LT(r->requests[2].ttft_s, 0);
}

TEST(MeasuredCsv, ReadsAnyCsvWithTheNeededColumnsAndConvertsUnits) {
  const std::string text =
      "user,arrival_ms,prompt_tokens,output_tokens,ttft_ms,e2e_us,queue_s,tpot_s,note\n"
      "a,0,10,3,25,90000,,0.02,\"x, y\"\n"
      "b,1500,12,4,30.5,120000,0.001,,z\n";
  auto r = parse(text);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->format, MeasuredFormat::kCsv);
  ASSERT_EQ(r->requests.size(), 2u);
  EXPECT_DOUBLE_EQ(r->requests[1].arrival_s, 1.5);
  EXPECT_DOUBLE_EQ(r->requests[1].ttft_s, 0.0305);
  EXPECT_DOUBLE_EQ(r->requests[0].e2e_s, 0.09);
  EXPECT_LT(r->requests[0].queue_s, 0);  // empty: not measured
  EXPECT_DOUBLE_EQ(r->requests[1].queue_s, 0.001);
  EXPECT_LT(r->requests[1].tpot_s, 0);
}

TEST(MeasuredBadInput, EachErrorNamesTheFileTheLineAndTheField) {
  const std::string head = "arrival_s,prompt_tokens,output_tokens,ttft_s,e2e_s\n";
  const std::string row = "0,10,5,0.1,0.5\n";
  struct Case {
    std::string text, expect;
  } cases[] = {
      {"arrival_s,prompt_tokens,output_tokens,e2e_s\n" + row, "m.csv:1: ttft_s: missing column"},
      {"arrival_s,prompt_tokens,output_tokens,ttft_min,e2e_s\n" + row,
       "m.csv:1: ttft_min: unknown unit \"min\""},
      {"arrival_s,prompt_tokens,output_tokens,ttft,e2e_s\n" + row,
       "m.csv:1: ttft: a time needs its unit"},
      {head + row + "1,10,5,fast,0.5\n", "m.csv:3: ttft_s: expected a number, got \"fast\""},
      {head + row + "1,ten,5,0.1,0.5\n", "m.csv:3: prompt_tokens: expected an integer"},
      {head + row + row + "1,10,5,0.1,-0.5\n", "m.csv:4: e2e_s: negative time"},
      {head + "2,10,5,0.1,0.5\n" + "1,10,5,0.1,0.5\n", "m.csv:3: arrival_s: 1 s is before"},
      {head + "0,10,5,,0.5\n", "m.csv:2: ttft_s: expected a number, got an empty cell"},
      {head + "0,10,5,0.1\n", "m.csv:2: expected 5 comma-separated columns, got 4"},
      {"", "m.csv: empty file"},
      {"\n\n", "m.csv: empty file"},
      {head, "m.csv: no requests"},
      {"arrival_s,prompt_tokens,output_tokens,ttft_s,ttft_ms,e2e_s\n",
       "m.csv:1: ttft_ms: the same field as column ttft_s"},
  };
  for (const Case& c : cases) {
    const std::string msg = error_of(c.text);
    EXPECT_NE(msg.find(c.expect), std::string::npos) << "got: " << msg << "\nwant: " << c.expect;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;  // one line
  }
}

TEST(MeasuredBadInput, JsonlErrorsNameTheLineAndTheKey) {
  const std::string ok = R"({"arrival_s": 0, "prompt_tokens": 1, "output_tokens": 2, "e2e_s": 1})";
  struct Case {
    std::string text, expect;
  } cases[] = {
      {ok + "\n" + R"({"arrival_s": 1, "prompt_tokens": 1, "output_tokens": 2, "e2e_s": "slow"})",
       "j.jsonl:2: e2e_s: expected a number of seconds, got string \"slow\""},
      {ok + "\n" + R"({"arrival_s": 1, "prompt_tokens": 1, "output_tokens": 2, "e2e_sec": 1})",
       "j.jsonl:2: e2e_sec: unknown unit \"sec\""},
      {ok + "\n" + R"({"arrival_s": 1, "output_tokens": 2, "e2e_s": 1})",
       "j.jsonl:2: prompt_tokens: missing"},
      {ok + "\n" + R"({"arrival_s": 1, "prompt_tokens": 1, "output_tokens": 2})",
       "j.jsonl:2: e2e_s: missing for a request that completed"},
      {ok + "\n" +
           R"({"arrival_s": 1, "prompt_tokens": 1, "output_tokens": 2, "ttft_s": -2, "e2e_s": 1})",
       "j.jsonl:2: ttft_s: negative time"},
      {R"({"arrival_s": 3, "prompt_tokens": 1, "output_tokens": 2, "e2e_s": 1})"
       "\n" +
           ok,
       "j.jsonl:2: arrival_s: 0 s is before the previous request's 3 s"},
      {ok + "\n{\"arrival_s\": 1,", "j.jsonl:2: malformed JSON"},
      {R"({"format": "other"})", "j.jsonl:1: format: expected \"prima-bench-requests\""},
      {R"({"format": "prima-bench-requests", "version": 1})", "j.jsonl: no requests"},
      {ok + "\n" +
           R"({"arrival_s": 1, "prompt_tokens": 1, "output_tokens": 2, "e2e_s": 1, "itl_s": 3})",
       "j.jsonl:2: itl_s: expected an array"},
  };
  for (const Case& c : cases) {
    const std::string msg = error_of(c.text, "j.jsonl");
    EXPECT_NE(msg.find(c.expect), std::string::npos) << "got: " << msg << "\nwant: " << c.expect;
  }
}

TEST(MeasuredBadInput, AMissingFileSaysSo) {
  auto r = read_measured("/nonexistent/run.jsonl");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/run.jsonl: cannot open"), std::string::npos);
}

}  // namespace
}  // namespace prima::replay
