// ServingEngine::cancel: a client that goes away takes its request out of the engine, frees
// its KV blocks and ends it exactly once, wherever it was (queued, on the devices, done).
#include <gtest/gtest.h>

#include "engine/cluster/serving_engine.h"
#include "tests/support/manual_runtime.h"

namespace prima::cluster {
namespace {

using prima::testing::ManualExecutor;
using prima::testing::ManualRuntime;

ReplicaSetup setup(Executor* ex, int kv_blocks) {
  ReplicaSetup r;
  r.executor = ex;
  r.num_kv_blocks = kv_blocks;
  return r;
}

Request req(int prompt, int out) {
  Request r;
  r.prompt_tokens = prompt;
  r.max_output_tokens = out;
  return r;
}

struct Ends {
  std::vector<RequestId> ids;
  std::vector<Outcome> outcomes;
  std::vector<std::string> reasons;
  void hook(ServingEngine* e) {
    e->on_end = [this](const Sequence& s) {
      ids.push_back(s.req.id);
      outcomes.push_back(s.outcome);
      reasons.push_back(s.reason);
    };
  }
};

TEST(ServingEngineCancel, RequestOnTheDevicesFreesItsBlocksWhenTheStepReturns) {
  ManualRuntime rt;
  ManualExecutor ex(&rt, [](const StepBatch&) { return 0.01; });
  metrics::Recorder rec;
  ServingEngine eng(&rt, EngineOptions{}, {setup(&ex, 100)}, &rec);
  Ends ends;
  ends.hook(&eng);
  int tokens = 0;
  eng.on_token = [&](const Sequence&) { ++tokens; };
  const int free0 = eng.replicas()[0]->kv().free_blocks();
  const RequestId id = eng.submit(req(100, 50));
  rt.advance_to(0.025);  // prefill done, a decode step in flight
  ASSERT_LT(eng.replicas()[0]->kv().free_blocks(), free0);
  const int tokens_before = tokens;
  EXPECT_TRUE(eng.cancel(id, "client disconnected"));
  EXPECT_TRUE(eng.cancel(id, "client disconnected"));  // still on its way out: harmless
  rt.run_until_idle();
  ASSERT_EQ(ends.ids.size(), 1u);
  EXPECT_EQ(ends.outcomes[0], Outcome::kFailed);
  EXPECT_EQ(ends.reasons[0], "client disconnected");
  EXPECT_EQ(tokens, tokens_before);  // the dropped step's token is not delivered
  EXPECT_EQ(eng.in_system(), 0);
  EXPECT_EQ(eng.replicas()[0]->kv().free_blocks(), free0);
  EXPECT_EQ(eng.replicas()[0]->num_running(), 0);
  EXPECT_EQ(eng.replicas()[0]->outstanding_tokens(), 0);
  EXPECT_FALSE(eng.cancel(id, "again"));  // ended: unknown now
  EXPECT_EQ(rec.count(Outcome::kFailed), 1);
}

TEST(ServingEngineCancel, QueuedRequestEndsAtOnceAndOthersCarryOn) {
  ManualRuntime rt;
  ManualExecutor ex(&rt, [](const StepBatch&) { return 0.01; });
  metrics::Recorder rec;
  EngineOptions opts;
  opts.scheduler.max_num_seqs = 1;  // the second request waits in the queue
  ServingEngine eng(&rt, opts, {setup(&ex, 100)}, &rec);
  Ends ends;
  ends.hook(&eng);
  const RequestId a = eng.submit(req(10, 5));
  const RequestId b = eng.submit(req(10, 5));
  rt.advance_to(0.005);
  ASSERT_EQ(eng.replicas()[0]->num_waiting(), 1);
  EXPECT_TRUE(eng.cancel(b, "client disconnected"));
  ASSERT_EQ(ends.ids.size(), 1u);  // a queued request ends immediately
  EXPECT_EQ(ends.ids[0], b);
  EXPECT_EQ(eng.replicas()[0]->num_waiting(), 0);
  rt.run_until_idle();
  ASSERT_EQ(ends.ids.size(), 2u);
  EXPECT_EQ(ends.ids[1], a);
  EXPECT_EQ(ends.outcomes[1], Outcome::kCompleted);
  EXPECT_EQ(eng.in_system(), 0);
  EXPECT_EQ(eng.replicas()[0]->kv().free_blocks(), eng.replicas()[0]->kv().num_blocks());
}

TEST(ServingEngineCancel, ManyCancelsAtRandomTimesLeakNothing) {
  ManualRuntime rt;
  ManualExecutor ex(&rt, [](const StepBatch& p) { return 0.005 + 1e-5 * p.shape.tokens(); });
  metrics::Recorder rec;
  ServingEngine eng(&rt, EngineOptions{}, {setup(&ex, 200)}, &rec);
  Ends ends;
  ends.hook(&eng);
  std::vector<RequestId> ids;
  for (int i = 0; i < 40; ++i) ids.push_back(eng.submit(req(20 + 7 * i, 3 + i % 11)));
  for (int i = 0; i < 40; i += 2) {
    rt.advance_to(0.003 * i);
    eng.cancel(ids[i], "client disconnected");
  }
  rt.run_until_idle();
  EXPECT_EQ(ends.ids.size(), 40u);  // each exactly once
  std::sort(ends.ids.begin(), ends.ids.end());
  EXPECT_EQ(std::unique(ends.ids.begin(), ends.ids.end()), ends.ids.end());
  EXPECT_EQ(eng.in_system(), 0);
  EXPECT_EQ(eng.replicas()[0]->kv().free_blocks(), eng.replicas()[0]->kv().num_blocks());
  EXPECT_EQ(eng.replicas()[0]->outstanding_tokens(), 0);
}

TEST(ServingEngineCancel, FinishEarlyEndsAsCompletedWithStopAndFreesTheBlocks) {
  ManualRuntime rt;
  ManualExecutor ex(&rt, [](const StepBatch&) { return 0.01; });
  metrics::Recorder rec;
  ServingEngine eng(&rt, EngineOptions{}, {setup(&ex, 100)}, &rec);
  std::vector<std::string> finish;
  Ends ends;
  ends.hook(&eng);
  auto base = eng.on_end;
  eng.on_end = [&](const Sequence& s) {
    base(s);
    finish.push_back(s.finish_reason);
  };
  int a_tokens_after = 0;  // tokens of `a` delivered after finish_early: none
  bool stopped = false;
  RequestId a = 0;
  eng.on_token = [&](const Sequence& s) { a_tokens_after += stopped && s.req.id == a; };
  const int free0 = eng.replicas()[0]->kv().free_blocks();
  a = eng.submit(req(100, 50));
  const RequestId b = eng.submit(req(10, 5));
  rt.advance_to(0.025);  // a decode step of both in flight
  EXPECT_TRUE(eng.finish_early(a));
  stopped = true;
  EXPECT_TRUE(eng.finish_early(a));  // already leaving: harmless
  rt.run_until_idle();
  ASSERT_EQ(ends.ids.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(ends.outcomes[i], Outcome::kCompleted);
    EXPECT_EQ(ends.reasons[i], "");
  }
  EXPECT_EQ(finish[ends.ids[0] == a ? 0 : 1], "stop");
  EXPECT_EQ(finish[ends.ids[0] == b ? 0 : 1], "length");
  EXPECT_EQ(rec.count(Outcome::kCompleted), 2);
  EXPECT_EQ(eng.replicas()[0]->kv().free_blocks(), free0);
  EXPECT_FALSE(eng.finish_early(a));  // gone
  // Queued (not started): ends at once.
  const RequestId c = eng.submit(req(10, 5));
  EXPECT_TRUE(eng.finish_early(c));
  EXPECT_EQ(ends.ids.back(), c);
  EXPECT_EQ(finish.back(), "stop");
  EXPECT_EQ(a_tokens_after, 0);  // the step in flight's token for `a` was dropped
}

}  // namespace
}  // namespace prima::cluster
