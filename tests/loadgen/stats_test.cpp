// compute_stats: percentiles against hand computation, TPOT/ITL definitions, throughput,
// SLO attainment and goodput (report.json's definitions), failures counted.
#include "loadgen/stats.h"

#include <gtest/gtest.h>

namespace prima::loadgen {
namespace {

RequestResult done(double send, double first, double end, int tokens,
                   std::vector<double> itl = {}) {
  RequestResult r;
  r.ok = true;
  r.http_status = 200;
  r.send_s = send;
  r.first_token_s = first;
  r.end_s = end;
  r.output_tokens = tokens;
  r.prompt_tokens = 10;
  r.itl_s = std::move(itl);
  return r;
}

TEST(Stats, PercentilesMatchHandComputation) {
  // E2E of 1..10 s (send at 0): numpy linear interpolation gives p50 5.5, p90 9.1, p99 9.91.
  std::vector<RequestResult> rs;
  for (int i = 1; i <= 10; ++i) rs.push_back(done(0, 0.1 * i, i, 11));
  BenchStats s = compute_stats(rs, {}, true);
  EXPECT_EQ(s.completed, 10u);
  EXPECT_DOUBLE_EQ(s.e2e.mean, 5.5);
  EXPECT_NEAR(s.e2e.p50, 5.5, 1e-12);
  EXPECT_NEAR(s.e2e.p90, 9.1, 1e-12);
  EXPECT_NEAR(s.e2e.p99, 9.91, 1e-12);
  EXPECT_DOUBLE_EQ(s.e2e.max, 10);
  EXPECT_NEAR(s.ttft.p50, 0.55, 1e-12);
  // TPOT of request i: (i - 0.1 i) / 10 = 0.09 i.
  EXPECT_NEAR(s.tpot.mean, 0.09 * 5.5, 1e-12);
  EXPECT_LE(s.e2e.p50, s.e2e.p90);
  EXPECT_LE(s.e2e.p90, s.e2e.p99);
}

TEST(Stats, ItlPoolsEveryGapAndTpotNeedsTwoTokens) {
  std::vector<RequestResult> rs = {done(0, 1, 2, 3, {0.25, 0.75}), done(0, 1, 1, 1),
                                   done(0, 0.5, 1.5, 2, {1.0})};
  BenchStats s = compute_stats(rs, {}, true);
  EXPECT_NEAR(s.itl.mean, (0.25 + 0.75 + 1.0) / 3, 1e-12);
  EXPECT_NEAR(s.itl.p50, 0.75, 1e-12);
  // TPOT only for >= 2 tokens: (2-1)/2 = 0.5 and (1.5-0.5)/1 = 1.
  EXPECT_NEAR(s.tpot.mean, 0.75, 1e-12);
}

TEST(Stats, ThroughputOverFirstSendToLastEnd) {
  std::vector<RequestResult> rs = {done(1, 1.5, 3, 100), done(2, 2.5, 5, 50)};
  RequestResult f;
  f.send_s = 2;
  f.end_s = 2.1;
  f.error = "HTTP 500: boom";
  rs.push_back(f);
  BenchStats s = compute_stats(rs, {}, true);
  EXPECT_EQ(s.submitted, 3u);
  EXPECT_EQ(s.completed, 2u);
  EXPECT_EQ(s.failed, 1u);
  EXPECT_DOUBLE_EQ(s.duration_s, 4);
  EXPECT_DOUBLE_EQ(s.requests_per_s, 0.5);
  EXPECT_DOUBLE_EQ(s.output_tokens_per_s, 150.0 / 4);
  EXPECT_DOUBLE_EQ(s.input_tokens_per_s, 20.0 / 4);
}

TEST(Stats, GoodputUnderSlo) {
  // TTFT 0.1, 0.3; TPOT 0.01, 0.05; E2E 1, 2 (10 tokens each).
  std::vector<RequestResult> rs = {done(0, 0.1, 1.0, 91), done(0, 0.3, 2.0, 35)};
  rs[0].end_s = 1.0;
  RequestResult f;  // a failure never meets the SLO
  f.end_s = 0.5;
  rs.push_back(f);
  SloBounds slo;
  slo.ttft_s = 0.2;
  BenchStats s = compute_stats(rs, slo, true);
  EXPECT_EQ(s.slo_met, 1u);
  EXPECT_NEAR(s.slo_attainment, 1.0 / 3, 1e-12);
  EXPECT_NEAR(s.goodput_rps, 1.0 / 2.0, 1e-12);
  slo = {};
  slo.e2e_s = 2.5;
  EXPECT_EQ(compute_stats(rs, slo, true).slo_met, 2u);
  slo.tpot_s = 0.02;  // request 2: (2 - 0.3) / 34 = 0.05
  EXPECT_EQ(compute_stats(rs, slo, true).slo_met, 1u);
  // The request's own sla bounds TTFT.
  rs[0].plan.sla_s = 0.05;
  EXPECT_EQ(compute_stats(rs, {}, true).slo_met, 1u);
}

TEST(Stats, NotStreamedChecksTtftAgainstE2eAndCannotCheckTpot) {
  RequestResult r = done(0, -1, 0.4, 10);
  SloBounds slo;
  slo.ttft_s = 0.3;
  EXPECT_FALSE(meets_slo(r, slo, false));  // E2E 0.4 > 0.3: TTFT cannot be shown to be within
  slo.ttft_s = 0.5;
  EXPECT_TRUE(meets_slo(r, slo, false));
  slo.tpot_s = 0.001;
  BenchStats s = compute_stats({r}, slo, false);
  EXPECT_EQ(s.slo_met, 1u);
  ASSERT_EQ(s.slo_unchecked.size(), 1u);
  EXPECT_EQ(s.slo_unchecked[0], "tpot_s");
}

TEST(Stats, ServerTimingsAndClientOverhead) {
  RequestResult r = done(0, 0.12, 1, 5);
  r.server.has_ttft = true;
  r.server.ttft_s = 0.1;
  BenchStats s = compute_stats({r}, {}, true);
  EXPECT_EQ(s.server_ttft.count, 1u);
  EXPECT_NEAR(s.ttft_client_minus_server.p50, 0.02, 1e-12);
  EXPECT_EQ(s.server_queue.count, 0u);
}

TEST(Stats, EmptyRunIsAllZeros) {
  BenchStats s = compute_stats({}, {}, true);
  EXPECT_EQ(s.submitted, 0u);
  EXPECT_EQ(s.requests_per_s, 0);
  EXPECT_EQ(s.slo_attainment, 0);
}

}  // namespace
}  // namespace prima::loadgen
