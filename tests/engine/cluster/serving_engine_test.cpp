#include "engine/cluster/serving_engine.h"

#include <gtest/gtest.h>

#include "tests/support/manual_runtime.h"

namespace prima::cluster {
namespace {

using prima::testing::ManualExecutor;
using prima::testing::ManualRuntime;

ReplicaSetup rs(Executor* ex, int gpus, int kv_blocks, int stage_gpus) {
  ReplicaSetup r;
  r.executor = ex;
  r.gpus = gpus;
  r.num_kv_blocks = kv_blocks;
  r.stage_gpus = stage_gpus;
  return r;
}

Request req(Time t, int prompt, int out) {
  Request r;
  r.arrival_s = t;
  r.prompt_tokens = prompt;
  r.max_output_tokens = out;
  return r;
}

TEST(ServingEngine, RunsRequestsToCompletionWithTimestamps) {
  ManualRuntime rt;
  // 10 ms per step plus 0.1 ms per token.
  ManualExecutor ex(&rt, [](const StepBatch& p) { return 0.010 + 1e-4 * p.shape.tokens(); });
  metrics::Recorder rec;
  EngineOptions opts;
  ServingEngine eng(&rt, opts, {rs(&ex, 1, 1000, 1)}, &rec);
  int ended = 0;
  eng.on_end = [&](const Sequence& s) {
    ++ended;
    EXPECT_EQ(s.outcome, Outcome::kCompleted);
  };
  eng.submit(req(0, 100, 4));
  rt.run_until_idle();
  EXPECT_EQ(ended, 1);
  ASSERT_EQ(rec.records().size(), 1u);
  const auto& r = rec.records()[0];
  EXPECT_DOUBLE_EQ(r.first_scheduled_s, 0);
  EXPECT_NEAR(r.first_token_s, 0.010 + 0.0100, 1e-12);  // prefill of 100 tokens
  EXPECT_NEAR(r.finish_s, r.first_token_s + 3 * 0.0101, 1e-12);
  EXPECT_NEAR(r.tpot_s(), 0.0101, 1e-12);
  EXPECT_EQ(r.output_tokens, 4);
  EXPECT_EQ(eng.in_system(), 0);
}

TEST(ServingEngine, ConcurrentArrivalsShareSteps) {
  ManualRuntime rt;
  ManualExecutor ex(&rt, [](const StepBatch&) { return 0.01; });
  metrics::Recorder rec;
  ServingEngine eng(&rt, EngineOptions{}, {rs(&ex, 1, 1000, 1)}, &rec);
  for (int i = 0; i < 8; ++i) eng.submit(req(0, 10, 5));
  rt.run_until_idle();
  EXPECT_EQ(rec.count(Outcome::kCompleted), 8);
  EXPECT_EQ(ex.launched(), 5);  // all 8 batched from the first step: 1 prefill + 4 decodes
}

// Tokens are counted the same whether a token callback runs per token or the engine counts a
// step's tokens at once (no callback, nothing cancelling, no handoff).
TEST(ServingEngine, CountsTokensWithAndWithoutATokenCallback) {
  std::int64_t counted[2] = {0, 0};
  for (int with_callback = 0; with_callback < 2; ++with_callback) {
    ManualRuntime rt;
    ManualExecutor ex(&rt, [](const StepBatch&) { return 0.01; });
    metrics::Recorder rec;
    ServingEngine eng(&rt, EngineOptions{}, {rs(&ex, 1, 1000, 1)}, &rec);
    int seen = 0;
    if (with_callback) eng.on_token = [&](const Sequence&) { ++seen; };
    for (int i = 0; i < 6; ++i) eng.submit(req(0.001 * i, 10 + i, 3 + i));
    rt.run_until_idle();
    EXPECT_EQ(rec.count(Outcome::kCompleted), 6);
    counted[with_callback] = rec.output_tokens();
    if (with_callback) {
      EXPECT_EQ(seen, rec.output_tokens());
    }
  }
  EXPECT_EQ(counted[0], 3 + 4 + 5 + 6 + 7 + 8);
  EXPECT_EQ(counted[1], counted[0]);
}

TEST(ServingEngine, RejectsWhatCanNeverFitWithAReason) {
  ManualRuntime rt;
  ManualExecutor ex(&rt, [](const StepBatch&) { return 0.01; });
  metrics::Recorder rec;
  EngineOptions opts;
  opts.max_model_len = 2048;
  ServingEngine eng(&rt, opts, {rs(&ex, 1, 10, 1)}, &rec);  // 160 tokens of KV
  eng.submit(req(0, 4000, 10));
  eng.submit(req(0, 150, 20));
  eng.submit(req(0, 0, 20));
  rt.run_until_idle();
  ASSERT_EQ(rec.count(Outcome::kRejected), 3);
  EXPECT_NE(rec.records()[0].reason.find("context limit 2048"), std::string::npos);
  EXPECT_NE(rec.records()[1].reason.find("KV cache"), std::string::npos);
  EXPECT_EQ(rec.submitted(), 3);
}

TEST(ServingEngine, ConservationUnderPreemptionAndFailures) {
  ManualRuntime rt;
  ManualExecutor ex(&rt, [](const StepBatch& p) { return 0.005 + 1e-5 * p.shape.tokens(); });
  metrics::Recorder rec;
  EngineOptions opts;
  opts.scheduler.max_step_retries = 0;
  ServingEngine eng(&rt, opts, {rs(&ex, 1, 40, 1)}, &rec);  // small cache: forces preemption
  for (int i = 0; i < 50; ++i) {
    rt.advance_to(i * 0.003);
    eng.submit(req(rt.now(), 50 + (i * 37) % 200, 20 + (i * 13) % 60));
    if (i == 25) ex.fail_next(unavailable("link down"));
  }
  rt.run_until_idle();
  EXPECT_EQ(rec.submitted(), 50);
  EXPECT_EQ(
      rec.count(Outcome::kCompleted) + rec.count(Outcome::kRejected) + rec.count(Outcome::kFailed),
      50);
  EXPECT_GT(rec.preemptions(), 0);
  EXPECT_GT(rec.count(Outcome::kFailed), 0);
  EXPECT_EQ(eng.in_system(), 0);
  EXPECT_EQ(eng.replicas()[0]->kv().free_blocks(), 40);
}

TEST(ServingEngine, PipelinedExecutorKeepsSeveralStepsInFlight) {
  ManualRuntime rt;
  ManualExecutor ex(
      &rt, [](const StepBatch&) { return 0.02; }, /*max_inflight=*/2);
  metrics::Recorder rec;
  EngineOptions opts;
  opts.scheduler.max_seqs_per_step = 4;
  ServingEngine eng(&rt, opts, {rs(&ex, 2, 1000, 1)}, &rec);
  for (int i = 0; i < 8; ++i) eng.submit(req(0, 10, 3));
  rt.run_until_idle();
  EXPECT_EQ(rec.count(Outcome::kCompleted), 8);
  // Two micro-batches of 4 alternate: 3 steps each, overlapped -> 0.06 s total.
  EXPECT_NEAR(rec.last_finish_s(), 0.06, 1e-12);
}

TEST(ServingEngine, RoundRobinAndLeastOutstanding) {
  ManualRuntime rt;
  ManualExecutor ex(&rt, [](const StepBatch&) { return 0.01; });
  metrics::Recorder rec;
  EngineOptions opts;
  opts.routing = RoutingPolicy::kLeastOutstandingTokens;
  ServingEngine eng(&rt, opts, {rs(&ex, 1, 1000, 1), rs(&ex, 1, 1000, 1)}, &rec);
  eng.submit(req(0, 500, 10));
  eng.submit(req(0, 10, 10));
  eng.submit(req(0, 10, 10));
  EXPECT_EQ(eng.replicas()[0]->num_waiting(), 1);
  EXPECT_EQ(eng.replicas()[1]->num_waiting(), 2);
  rt.run_until_idle();
}

}  // namespace
}  // namespace prima::cluster
