// ServerMetrics: the Prometheus exposition has the prima:* families, labelled by model and
// priority, and counts what the engine reports (tokens, outcomes, cancellations, gauges).
#include "server/metrics.h"

#include <gtest/gtest.h>

namespace prima::server {
namespace {

bool has_line(const std::string& text, const std::string& line) {
  return text.find(line + "\n") != std::string::npos;
}

TEST(ServerMetrics, CountsTokensOutcomesAndState) {
  ServerMetrics m("M");
  m.on_token(Priority::kHigh, -1);
  m.on_token(Priority::kHigh, 0.02);
  Sequence done;
  done.req.priority = Priority::kHigh;
  done.req.arrival_s = 1.0;
  done.req.prompt_tokens = 12;
  done.first_scheduled_s = 1.1;
  done.first_token_s = 1.25;
  done.finish_s = 1.5;
  done.outcome = Outcome::kCompleted;
  m.on_end(done);
  Sequence gone;
  gone.req.arrival_s = 2.0;
  gone.outcome = Outcome::kFailed;
  gone.reason = "client disconnected";
  m.on_end(gone);
  m.on_state(0.0, 3, 4, 0.25, 7, 0.0, 2);
  m.on_state(2.0, 3, 4, 0.25, 9, 3.0, 2);  // 3 busy GPU-s over 2 GPUs x 2 s
  const std::string t = m.text();
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

}  // namespace
}  // namespace prima::server
