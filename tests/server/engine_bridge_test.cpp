// EngineBridge: a submitted request's tokens and end reach its stream; cancel frees the
// request's KV blocks; the snapshot shows the engine's state.
#include "server/engine_bridge.h"

#include <gtest/gtest.h>

#include "server/metrics.h"
#include "tests/support/bridge_fixture.h"
#include "tests/support/faulty_executor.h"

namespace prima::server {
namespace {

using prima::testing::ManualExecutor;
using prima::testing::ManualRuntime;

using Fixture = prima::testing::BridgeFixture;

TEST(EngineBridge, TokensThenTheEndReachTheStream) {
  Fixture f;
  GenRequest g;
  g.prompt_tokens = 30;
  g.max_tokens = 4;
  g.priority = Priority::kHigh;
  RequestId id = 0;
  auto st = f.bridge->submit(g, &id);
  EXPECT_EQ(f.bridge->open(), 1);
  f.rt.advance_to(0.5);
  f.rt.run_until_idle();
  std::vector<StreamToken> toks;
  StreamEnd e = st->wait_end(&toks);
  EXPECT_EQ(e.outcome, Outcome::kCompleted);
  EXPECT_EQ(e.finish_reason, "length");
  EXPECT_EQ(e.output_tokens, 4);
  EXPECT_EQ(e.prompt_tokens, 30);
  ASSERT_EQ(toks.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(toks[i].index, i);
  EXPECT_NEAR(e.ttft_s(), 0.01, 1e-9);  // one prefill step
  EXPECT_NEAR(toks[0].time_s - e.arrival_s, e.ttft_s(), 1e-12);
  EXPECT_EQ(f.bridge->open(), 0);
  f.bridge->publish();
  EXPECT_EQ(f.bridge->snapshot().in_system, 0);
  EXPECT_EQ(f.bridge->snapshot().ended, 1);
}

TEST(EngineBridge, CancelEndsTheStreamAndFreesTheBlocks) {
  Fixture f;
  GenRequest g;
  g.prompt_tokens = 300;
  g.max_tokens = 1000;
  RequestId id = 0;
  auto st = f.bridge->submit(g, &id);
  f.rt.advance_to(0.055);
  f.bridge->publish();
  auto snap = f.bridge->snapshot();
  EXPECT_EQ(snap.in_system, 1);
  EXPECT_LT(snap.kv_free_blocks, snap.kv_blocks);
  f.bridge->cancel(id, "client disconnected");
  f.rt.run_until_idle();
  std::vector<StreamToken> toks;
  StreamEnd e = st->wait_end(&toks);
  EXPECT_EQ(e.outcome, Outcome::kFailed);
  EXPECT_EQ(e.reason, "client disconnected");
  EXPECT_LT(e.output_tokens, 1000);
  f.bridge->publish();
  snap = f.bridge->snapshot();
  EXPECT_EQ(snap.in_system, 0);
  EXPECT_EQ(snap.kv_free_blocks, snap.kv_blocks);
  EXPECT_EQ(f.bridge->open(), 0);
}

TEST(EngineBridge, ARequestThatCanNeverFitIsRejectedOnItsStream) {
  Fixture f;
  GenRequest g;
  g.prompt_tokens = 5000;  // 100 blocks of 16 tokens hold 1600
  g.max_tokens = 10;
  auto st = f.bridge->submit(g, nullptr);
  f.rt.run_until_idle();
  std::vector<StreamToken> toks;
  StreamEnd e = st->wait_end(&toks);
  EXPECT_EQ(e.outcome, Outcome::kRejected);
  EXPECT_NE(e.reason.find("KV cache"), std::string::npos);
  EXPECT_TRUE(toks.empty());
}

// A replica whose step fails is taken out of routing: the snapshot counts it unhealthy with
// the step's error, no replica serves (readiness turns 503), prima:replicas shows it; when
// its probes answer again it serves again.
TEST(EngineBridge, SnapshotCountsReplicasByStateAndTheErrorThatTookOneOut) {
  ManualRuntime rt;
  prima::testing::FaultyExecutor ex(
      &rt, [](const StepBatch&) { return 0.01; }, "rank 1");
  metrics::Recorder rec;
  cluster::ReplicaSetup rs;
  rs.executor = &ex;
  rs.num_kv_blocks = 100;
  cluster::EngineOptions eo;
  eo.cluster.health.reload_weights = false;
  eo.cluster.health.probe_interval_s = 1;
  cluster::ServingEngine eng(&rt, eo, {rs}, &rec);
  EngineBridge bridge(&eng, &rt, [&](std::function<void()> fn) { rt.post(fn); });
  ServerMetrics m("m", 1024);
  bridge.set_metrics(&m, &rec, 1);

  EXPECT_FALSE(bridge.snapshot().published);
  EXPECT_TRUE(bridge.snapshot().serving());  // before the first publish: not held back
  bridge.publish();
  EXPECT_EQ(bridge.snapshot().replicas_active, 1);
  EXPECT_TRUE(bridge.snapshot().serving());
  EXPECT_NE(m.text().find("prima:replicas{model=\"m\",state=\"active\"} 1"), std::string::npos);

  ex.set_down(true);
  GenRequest g;
  g.prompt_tokens = 10;
  g.max_tokens = 2;
  RequestId id = 0;
  auto st = bridge.submit(g, &id);
  rt.advance_to(0.5);
  bridge.publish();
  EngineSnapshot s = bridge.snapshot();
  EXPECT_EQ(s.replicas_active, 0);
  EXPECT_EQ(s.replicas_unhealthy, 1);
  EXPECT_EQ(s.replicas(), 1);
  EXPECT_FALSE(s.serving());
  EXPECT_NE(s.replica_error.find("rank 1 is down"), std::string::npos) << s.replica_error;
  EXPECT_NE(m.text().find("prima:replicas{model=\"m\",state=\"unhealthy\"} 1"), std::string::npos);

  ex.set_down(false);  // probes answer ok: it serves again and the request completes
  rt.advance_to(5);
  bridge.publish();
  s = bridge.snapshot();
  EXPECT_EQ(s.replicas_active, 1);
  EXPECT_EQ(s.replicas_unhealthy, 0);
  EXPECT_TRUE(s.replica_error.empty());
  EXPECT_TRUE(s.serving());
  std::vector<StreamToken> toks;
  const StreamEnd e = st->wait_end(&toks);
  EXPECT_EQ(e.outcome, Outcome::kCompleted) << e.reason;
}

TEST(TokenStream, WaitTimesOutWhenNothingCame) {
  TokenStream st;
  std::vector<StreamToken> toks;
  std::optional<StreamEnd> end;
  EXPECT_FALSE(st.wait(&toks, &end, std::chrono::milliseconds(1)));
  st.push({0, -1, 0.1, ""});
  StreamEnd e;
  e.outcome = Outcome::kCompleted;
  st.finish(e);
  st.finish(e);  // ends once
  EXPECT_TRUE(st.wait(&toks, &end, std::chrono::milliseconds(1)));
  EXPECT_EQ(toks.size(), 1u);
  ASSERT_TRUE(end);
  EXPECT_FALSE(st.wait(&toks, &end, std::chrono::milliseconds(1)));  // the end is taken once
}

}  // namespace
}  // namespace prima::server
