// ServerMetrics: the Prometheus exposition has the prima:* families, labelled by model and
// priority, and counts what the engine reports (tokens, outcomes, cancellations, gauges);
// refused and errored requests are counted by reason; vLLM's families carry vLLM's names,
// the model_name label and vLLM's buckets.
#include "server/metrics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace prima::server {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

// The `le` boundaries of one histogram's bucket lines, in order ("+Inf" last, as infinity).
std::vector<double> bucket_bounds(const std::string& text, const std::string& family) {
  std::vector<double> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(family + "_bucket{", 0) != 0) continue;
    const auto at = line.find("le=\"");
    if (at == std::string::npos) continue;
    const std::string le = line.substr(at + 4, line.find('"', at + 4) - at - 4);
    out.push_back(le == "+Inf" ? INFINITY : std::strtod(le.c_str(), nullptr));
  }
  return out;
}

std::vector<double> with_inf(std::vector<double> b) {
  b.push_back(INFINITY);
  return b;
}

Sequence completed(Priority p, double arrival, int prompt, int generated, int max_tokens) {
  Sequence s;
  s.req.priority = p;
  s.req.arrival_s = arrival;
  s.req.prompt_tokens = prompt;
  s.req.max_output_tokens = max_tokens;
  s.num_generated = generated;
  s.first_scheduled_s = arrival + 0.125;  // binary fractions: exact sums in the text
  s.first_token_s = arrival + 0.25;
  s.finish_s = arrival + 0.5;
  s.outcome = Outcome::kCompleted;
  return s;
}

TEST(ServerMetrics, CountsTokensOutcomesAndState) {
  ServerMetrics m("M", 2048);
  Sequence done = completed(Priority::kHigh, 1.0, 12, 2, 2);
  m.on_token(done, -1);
  m.on_token(done, 0.02);
  m.on_end(done);
  Sequence gone;
  gone.req.arrival_s = 2.0;
  gone.outcome = Outcome::kFailed;
  gone.reason = "client disconnected";
  m.on_end(gone);
  m.on_state(0.0, 3, 4, 0.25, 7, 0.0, 2);
  m.on_state(2.0, 3, 4, 0.25, 9, 3.0, 2);  // 3 busy GPU-s over 2 GPUs x 2 s
  m.on_flops(1e12);
  m.on_flops(3e12);
  m.on_flops(2e12);  // a running total never goes back: ignored
  m.on_replicas(2, 1, 0, 0);
  const std::string t = m.text();
  EXPECT_TRUE(has_line(t, R"(prima:flops_total{model="M"} 3000000000000)")) << t;
  EXPECT_TRUE(has_line(t, R"(prima:replicas{model="M",state="unhealthy"} 1)")) << t;
  EXPECT_TRUE(has_line(t, R"(prima:replicas{model="M",state="active"} 2)")) << t;
  EXPECT_TRUE(has_line(t, R"(prima:generation_tokens_total{model="M",priority="high"} 2)")) << t;
  EXPECT_TRUE(has_line(t, R"(prima:prompt_tokens_total{model="M",priority="high"} 12)"));
  EXPECT_TRUE(
      has_line(t, R"(prima:inter_token_latency_seconds_count{model="M",priority="high"} 1)"));
  EXPECT_TRUE(
      has_line(t, R"(prima:time_to_first_token_seconds_sum{model="M",priority="high"} 0.25)"));
  EXPECT_TRUE(
      has_line(t, R"(prima:e2e_request_latency_seconds_sum{model="M",priority="high"} 0.5)"));
  EXPECT_TRUE(has_line(
      t, R"(prima:request_outcomes_total{model="M",outcome="completed",priority="high"} 1)"));
  EXPECT_TRUE(has_line(
      t, R"(prima:request_outcomes_total{model="M",outcome="cancelled",priority="normal"} 1)"));
  EXPECT_TRUE(has_line(t, R"(prima:num_requests_running{model="M"} 3)"));
  EXPECT_TRUE(has_line(t, R"(prima:num_requests_waiting{model="M"} 4)"));
  EXPECT_TRUE(has_line(t, R"(prima:kv_cache_usage_perc{model="M"} 0.25)"));
  EXPECT_TRUE(has_line(t, R"(prima:num_preemptions_total{model="M"} 9)"));
  EXPECT_TRUE(has_line(t, R"(prima:gpu_utilization_perc{model="M"} 0.75)"));
  EXPECT_TRUE(has_line(t, "# TYPE prima:request_queue_time_seconds histogram"));
}

TEST(ServerMetrics, VllmFamiliesHaveVllmNamesTheModelNameLabelAndCounts) {
  ServerMetrics m("M", 2048);
  Sequence stop = completed(Priority::kLow, 1.0, 12, 2, 8);  // ended before max_tokens
  m.on_token(stop, -1);
  m.on_token(stop, 0.02);
  m.on_end(stop);
  Sequence length = completed(Priority::kNormal, 2.0, 30, 3, 3);
  for (double itl : {-1.0, 0.03, 0.04}) m.on_token(length, itl);
  m.on_end(length);
  Sequence gone;  // cancelled while queued: no token, counted as aborted
  gone.req.arrival_s = 3.0;
  gone.outcome = Outcome::kFailed;
  gone.reason = "client disconnected";
  m.on_end(gone);
  Sequence refused;  // rejected by the engine: vLLM would have refused it at its API
  refused.outcome = Outcome::kRejected;
  m.on_end(refused);
  m.on_state(0.0, 3, 4, 0.25, 5, 0.0, 2);
  m.on_state(1.0, 3, 4, 0.25, 7, 0.0, 2);
  const std::string t = m.text();
  const std::string l = R"({engine="0",model_name="M"})";
  EXPECT_TRUE(has_line(t, "vllm:num_requests_running" + l + " 3")) << t;
  EXPECT_TRUE(has_line(t, "vllm:num_requests_waiting" + l + " 4"));
  EXPECT_TRUE(has_line(t, "vllm:gpu_cache_usage_perc" + l + " 0.25"));
  EXPECT_TRUE(has_line(t, "vllm:kv_cache_usage_perc" + l + " 0.25"));
  EXPECT_TRUE(has_line(t, "vllm:num_preemptions_total" + l + " 7"));
  EXPECT_TRUE(has_line(t, "vllm:prompt_tokens_total" + l + " 42"));
  EXPECT_TRUE(has_line(t, "vllm:generation_tokens_total" + l + " 5"));
  for (const char* reason : {"stop", "length", "abort"})
    EXPECT_TRUE(
        has_line(t, std::string(R"(vllm:request_success_total{engine="0",finished_reason=")") +
                        reason + R"(",model_name="M"} 1)"))
        << reason;
  EXPECT_TRUE(has_line(t, "vllm:time_to_first_token_seconds_count" + l + " 2"));
  EXPECT_TRUE(has_line(t, "vllm:time_to_first_token_seconds_sum" + l + " 0.5"));
  EXPECT_TRUE(has_line(t, "vllm:time_per_output_token_seconds_count" + l + " 3"));
  EXPECT_TRUE(has_line(t, "vllm:inter_token_latency_seconds_count" + l + " 3"));
  EXPECT_TRUE(has_line(t, "vllm:e2e_request_latency_seconds_count" + l + " 2"));
  EXPECT_TRUE(has_line(t, "vllm:e2e_request_latency_seconds_sum" + l + " 1"));
  EXPECT_TRUE(has_line(t, "vllm:request_queue_time_seconds_sum" + l + " 0.25"));
  EXPECT_TRUE(has_line(t, "vllm:request_prefill_time_seconds_sum" + l + " 0.25"));
  EXPECT_TRUE(has_line(t, "vllm:request_decode_time_seconds_sum" + l + " 0.5"));
  EXPECT_TRUE(has_line(t, "vllm:request_inference_time_seconds_sum" + l + " 0.75"));
  EXPECT_TRUE(has_line(t, "vllm:request_prompt_tokens_sum" + l + " 42"));
  EXPECT_TRUE(has_line(t, "vllm:request_generation_tokens_sum" + l + " 5"));
  EXPECT_TRUE(has_line(t, "vllm:request_params_max_tokens_sum" + l + " 11"));
  for (const char* h : {"time_to_first_token_seconds", "time_per_output_token_seconds",
                        "e2e_request_latency_seconds", "request_prompt_tokens"})
    EXPECT_TRUE(has_line(t, std::string("# TYPE vllm:") + h + " histogram")) << h;
}

TEST(ServerMetrics, VllmHistogramsHaveVllmsBuckets) {
  ServerMetrics m("M", 2048);
  const std::string t = m.text();
  EXPECT_EQ(bucket_bounds(t, "vllm:time_to_first_token_seconds"), with_inf(kVllmTtftBuckets));
  EXPECT_EQ(bucket_bounds(t, "vllm:time_per_output_token_seconds"), with_inf(kVllmTpotBuckets));
  EXPECT_EQ(bucket_bounds(t, "vllm:inter_token_latency_seconds"), with_inf(kVllmTpotBuckets));
  for (const char* h : {"e2e_request_latency_seconds", "request_queue_time_seconds",
                        "request_inference_time_seconds", "request_prefill_time_seconds",
                        "request_decode_time_seconds"})
    EXPECT_EQ(bucket_bounds(t, std::string("vllm:") + h), with_inf(kVllmLatencyBuckets)) << h;
  const std::vector<double> lengths = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000};
  for (const char* h :
       {"request_prompt_tokens", "request_generation_tokens", "request_params_max_tokens"})
    EXPECT_EQ(bucket_bounds(t, std::string("vllm:") + h), with_inf(lengths)) << h;
  // The values vLLM uses (vllm/v1/metrics/loggers.py): ends and sizes.
  EXPECT_EQ(kVllmTtftBuckets.size(), 22u);
  EXPECT_EQ(kVllmTtftBuckets.front(), 0.001);
  EXPECT_EQ(kVllmTtftBuckets.back(), 2560.0);
  EXPECT_EQ(kVllmTpotBuckets.size(), 19u);
  EXPECT_EQ(kVllmTpotBuckets.front(), 0.01);
  EXPECT_EQ(kVllmTpotBuckets.back(), 80.0);
  EXPECT_EQ(kVllmLatencyBuckets.size(), 21u);
  EXPECT_EQ(kVllmLatencyBuckets.front(), 0.3);
  EXPECT_EQ(kVllmLatencyBuckets.back(), 7680.0);
}

TEST(ServerMetrics, VllmTokenBucketsAreOneTwoFiveUpToTheContext) {
  EXPECT_EQ(vllm_1_2_5_buckets(100), (std::vector<double>{1, 2, 5, 10, 20, 50, 100}));
  EXPECT_EQ(vllm_1_2_5_buckets(8191).back(), 5000);
  EXPECT_EQ(vllm_1_2_5_buckets(1), (std::vector<double>{1}));
  EXPECT_EQ(vllm_1_2_5_buckets(0), (std::vector<double>{1}));  // unknown context: one bucket
}

TEST(ServerMetrics, VllmFinishedReason) {
  Sequence s = completed(Priority::kNormal, 0, 4, 3, 3);
  EXPECT_EQ(vllm_finished_reason(s), "length");
  s.finish_reason = "stop";  // a stop token on the last allowed position
  EXPECT_EQ(vllm_finished_reason(s), "stop");
  s.finish_reason.clear();
  s.num_generated = 2;
  EXPECT_EQ(vllm_finished_reason(s), "stop");  // a stop string ended it early
  s.outcome = Outcome::kFailed;
  EXPECT_EQ(vllm_finished_reason(s), "abort");
}

TEST(ServerMetrics, RefusedAndErroredRequestsAreCountedByReason) {
  ServerMetrics m("M", 2048);
  m.on_refused(Rejection::kCapacity, Priority::kHigh);  // a 429 at admission
  m.on_refused(Rejection::kDraining, Priority::kNormal);
  for (int status : {400, 422, 401, 404, 413, 431, 429, 503, 500, 200, 302})
    m.on_http_error(status);
  Sequence engine_rejected;
  engine_rejected.outcome = Outcome::kRejected;
  engine_rejected.reason = "can never fit the KV cache";
  m.on_end(engine_rejected);
  Sequence failed;
  failed.outcome = Outcome::kFailed;
  failed.reason = "replica failed";
  m.on_end(failed);
  const std::string t = m.text();
  auto rejected = [&](const char* reason, int n) {
    return has_line(t, std::string(R"(prima:requests_rejected_total{model_name="M",reason=")") +
                           reason + "\"} " + std::to_string(n));
  };
  EXPECT_TRUE(rejected("capacity", 2)) << t;  // admission's 429 and an unaccounted one
  EXPECT_TRUE(rejected("draining", 2));
  EXPECT_TRUE(rejected("invalid", 2));  // 400, 422 (200 and 302 are not errors)
  EXPECT_TRUE(rejected("unauthorized", 1));
  EXPECT_TRUE(rejected("not_found", 1));
  EXPECT_TRUE(rejected("too_large", 2));
  EXPECT_TRUE(rejected("engine", 1));
  auto errored = [&](const char* reason, int n) {
    return has_line(t, std::string(R"(prima:requests_errored_total{model_name="M",reason=")") +
                           reason + "\"} " + std::to_string(n));
  };
  EXPECT_TRUE(errored("internal", 1));
  EXPECT_TRUE(errored("failed", 1));
  EXPECT_TRUE(errored("cancelled", 0));
  // Refusals at admission (which know the priority) and the engine's count as rejected
  // outcomes; the unreadable ones do not (no priority).
  EXPECT_TRUE(has_line(
      t, R"(prima:request_outcomes_total{model="M",outcome="rejected",priority="high"} 1)"));
  EXPECT_TRUE(has_line(
      t, R"(prima:request_outcomes_total{model="M",outcome="rejected",priority="normal"} 2)"));
  EXPECT_TRUE(has_line(
      t, R"(prima:request_outcomes_total{model="M",outcome="failed",priority="normal"} 1)"));
}

TEST(ServerMetrics, LinkCountersAreReadAtEachScrape) {
  ServerMetrics m("M", 2048);
  EXPECT_EQ(m.text().find("prima:link_bytes_total"), std::string::npos);  // no source: none
  LinkCounters now;
  now.bytes = {{"0->1", 100}, {"1->0", 50}};
  now.retransmits = {{"tcp", "host", "", 1000}};
  m.set_link_source([&] { return now; });
  std::string t = m.text();
  EXPECT_TRUE(has_line(t, R"(prima:link_bytes_total{link="0->1",model="M"} 100)")) << t;
  EXPECT_TRUE(has_line(t, R"(prima:link_bytes_total{link="1->0",model="M"} 50)")) << t;
  // Retransmissions count from the first scrape (the host's total before prima started is
  // not prima's).
  EXPECT_TRUE(has_line(
      t, R"(prima:link_retransmissions_total{device="host",model="M",port="",transport="tcp"} 0)"))
      << t;
  now.bytes[0].bytes = 250;
  now.retransmits[0].count = 1007;
  t = m.text();
  EXPECT_TRUE(has_line(t, R"(prima:link_bytes_total{link="0->1",model="M"} 250)")) << t;
  EXPECT_TRUE(has_line(
      t, R"(prima:link_retransmissions_total{device="host",model="M",port="",transport="tcp"} 7)"))
      << t;
}

}  // namespace
}  // namespace prima::server
