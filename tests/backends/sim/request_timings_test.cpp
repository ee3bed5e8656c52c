// Per-request timings of a simulation (backends/sim/request_timings.h), as `prima replay`
// reads them: the same in a forked child as in the process, one record per request in
// arrival order, a gap per token after the first that adds up to the request's decode time,
// and failures that keep their status code. Each TEST runs in its own process (ctest).
#include "backends/sim/request_timings.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "engine/scenario/scenario.h"

namespace prima::sim {
namespace {

scenario::Scenario small_scenario() {
  auto sc = scenario::load_scenario(
      std::string(PRIMA_SOURCE_DIR) + "/tests/data/cli/replay_small.json", {"duration=5s"});
  EXPECT_TRUE(sc.ok()) << sc.status().message();
  return *sc;
}

TEST(RequestTimings, AChildGivesWhatTheProcessWouldWithEveryTokenGap) {
  const scenario::Scenario sc = small_scenario();
  auto child = simulate_request_timings_in_child(sc, /*token_gaps=*/true);
  ASSERT_TRUE(child.ok()) << child.status().message();
  auto again = simulate_request_timings_in_child(sc, /*token_gaps=*/false);  // a second engine
  ASSERT_TRUE(again.ok()) << again.status().message();
  ASSERT_GT(child->requests.size(), 5u);
  ASSERT_EQ(again->requests.size(), child->requests.size());
  double last = -1;
  for (std::size_t i = 0; i < child->requests.size(); ++i) {
    const auto& r = child->requests[i];
    EXPECT_EQ(r.id, i + 1);
    EXPECT_GE(r.arrival_s, last);  // ids follow arrival order
    last = r.arrival_s;
    ASSERT_TRUE(r.ok);
    ASSERT_EQ(r.itl_s.size(), static_cast<std::size_t>(r.output_tokens - 1));
    const double decode = std::accumulate(r.itl_s.begin(), r.itl_s.end(), 0.0);
    EXPECT_NEAR(decode, r.e2e_s - r.ttft_s, 1e-9);
    EXPECT_NEAR(r.tpot_s, decode / (r.output_tokens - 1), 1e-9);
    EXPECT_GE(r.queue_s, 0);
    // Recording gaps changes nothing else, and the doubles come back through the pipe exact.
    const auto& q = again->requests[i];
    EXPECT_TRUE(q.itl_s.empty());
    EXPECT_EQ(q.arrival_s, r.arrival_s);
    EXPECT_EQ(q.ttft_s, r.ttft_s);
    EXPECT_EQ(q.e2e_s, r.e2e_s);
  }
  EXPECT_GT(child->simulated_s, 5);

  auto here = simulate_request_timings(sc, /*token_gaps=*/true);
  ASSERT_TRUE(here.ok()) << here.status().message();
  ASSERT_EQ(here->requests.size(), child->requests.size());
  for (std::size_t i = 0; i < here->requests.size(); ++i) {
    EXPECT_EQ(here->requests[i].e2e_s, child->requests[i].e2e_s);
    EXPECT_EQ(here->requests[i].itl_s, child->requests[i].itl_s);
  }
}

TEST(RequestTimings, AFailureInTheChildKeepsItsCode) {
  scenario::Scenario sc = small_scenario();
  sc.workload.arrival.type = workload::ArrivalType::kTrace;
  sc.workload.arrival.format = workload::TraceFormat::kJsonl;
  sc.workload.arrival.path = "/nonexistent/trace.jsonl";
  auto r = simulate_request_timings_in_child(sc, true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().message();  // not "internal"
  EXPECT_NE(r.status().message().find("/nonexistent/trace.jsonl"), std::string::npos)
      << r.status().message();
}

}  // namespace
}  // namespace prima::sim
