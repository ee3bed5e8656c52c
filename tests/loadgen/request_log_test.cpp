// The per-request log of `prima bench --save-requests` (loadgen/request_log.h): the header,
// records in send order, nulls for what was not measured, and text that is not UTF-8.
#include "loadgen/request_log.h"

#include <gtest/gtest.h>

#include <sstream>

namespace prima::loadgen {
namespace {

RequestResult completed(std::uint64_t index, double send, int out) {
  RequestResult r;
  r.plan.index = index;
  r.plan.due_s = send - 0.001;
  r.plan.prompt_tokens = 100;
  r.plan.output_tokens = out;
  r.ok = true;
  r.http_status = 200;
  r.send_s = send;
  r.first_token_s = send + 0.05;
  r.end_s = send + 0.05 + 0.01 * (out - 1);
  r.itl_s.assign(static_cast<std::size_t>(out - 1), 0.01);
  r.output_tokens = out;
  r.prompt_tokens = 100;
  return r;
}

std::vector<nlohmann::json> lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l)) out.push_back(nlohmann::json::parse(l));
  return out;
}

TEST(RequestLog, HeaderThenRecordsInSendOrder) {
  BenchInfo info;
  info.url = "http://127.0.0.1:8000";
  info.endpoint = "chat";
  info.model = "m";
  info.seed = 3;
  // Arrival order 0, 1, 2; request 1 went out last (its worker was busy).
  std::vector<RequestResult> rs = {completed(0, 0.10, 4), completed(1, 0.35, 1),
                                   completed(2, 0.20, 3)};
  rs[1].server.has_queue = true;
  rs[1].server.queue_s = 0.002;
  const auto l = lines(request_log(info, rs));
  ASSERT_EQ(l.size(), 4u);
  EXPECT_EQ(l[0]["format"], "prima-bench-requests");
  EXPECT_EQ(l[0]["version"], 1);
  EXPECT_EQ(l[0]["url"], "http://127.0.0.1:8000");
  EXPECT_EQ(l[0]["endpoint"], "chat");
  EXPECT_EQ(l[0]["requests"], 3);
  EXPECT_EQ(l[1]["id"], 0);
  EXPECT_EQ(l[2]["id"], 2);
  EXPECT_EQ(l[3]["id"], 1);
  const auto& a = l[1];
  EXPECT_DOUBLE_EQ(a["arrival_s"].get<double>(), 0.10);
  EXPECT_DOUBLE_EQ(a["ttft_s"].get<double>(), 0.05);
  EXPECT_DOUBLE_EQ(a["tpot_s"].get<double>(), 0.01);
  EXPECT_DOUBLE_EQ(a["e2e_s"].get<double>(), 0.08);
  EXPECT_EQ(a["itl_s"].size(), 3u);
  EXPECT_EQ(a["output_tokens"], 4);
  EXPECT_EQ(a["max_tokens"], 4);
  EXPECT_FALSE(a.contains("queue_s"));  // the server did not say
  EXPECT_FALSE(a.contains("error"));
  EXPECT_TRUE(l[3]["tpot_s"].is_null());  // one token: no TPOT
  EXPECT_DOUBLE_EQ(l[3]["queue_s"].get<double>(), 0.002);
}

TEST(RequestLog, AFailedRequestHasItsErrorAndNoLatencies) {
  RequestResult r = completed(5, 1.0, 8);
  r.ok = false;
  r.http_status = 503;
  r.error = "HTTP 503: \xff busy";  // not UTF-8: replaced, never a throw
  r.output_tokens = 2;
  const auto l = lines(request_log(BenchInfo{}, {r}));
  ASSERT_EQ(l.size(), 2u);
  EXPECT_FALSE(l[1]["ok"].get<bool>());
  EXPECT_EQ(l[1]["http_status"], 503);
  EXPECT_TRUE(l[1]["ttft_s"].is_null());
  EXPECT_TRUE(l[1]["e2e_s"].is_null());
  EXPECT_TRUE(l[1]["itl_s"].empty());
  EXPECT_EQ(l[1]["max_tokens"], 8);
  EXPECT_NE(l[1]["error"].get<std::string>().find("busy"), std::string::npos);
}

}  // namespace
}  // namespace prima::loadgen
