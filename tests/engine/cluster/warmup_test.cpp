// Warmup: warm-up requests per replica, owned and counted apart from the run's requests.
#include "engine/cluster/warmup.h"

#include <gtest/gtest.h>

#include "tests/support/manual_runtime.h"

namespace prima::cluster {
namespace {

using prima::testing::ManualExecutor;
using prima::testing::ManualRuntime;

TEST(Warmup, SendsWarmupsThatFitAndCountsTheirEnds) {
  ManualRuntime rt;
  ManualExecutor ex(&rt, [](const StepBatch&) { return 0.01; });
  ReplicaEvents events;
  std::vector<Sequence*> finished;
  events.on_finished = [&](Sequence* s) { finished.push_back(s); };
  Replica r(0, 1, &rt, &ex, sched::SchedulerOptions{}, 100, &events);
  WarmupOptions o;
  o.requests = 3;
  ClusterCounters k;
  Warmup w(&rt, o, &k);
  w.send(&r);
  EXPECT_EQ(k.warmup_requests, 3);
  EXPECT_EQ(r.num_waiting(), 3);
  rt.run_until_idle();
  ASSERT_EQ(finished.size(), 3u);
  for (Sequence* s : finished) {
    EXPECT_TRUE(Warmup::is_warmup(*s));
    EXPECT_GE(s->req.id, Warmup::kIdBase);
  }
  w.complete(*finished[0]);
  w.drop(*finished[1]);  // taken off a failed replica: not completed
  w.complete(*finished[2]);
  EXPECT_EQ(k.warmup_completed, 2);
}

TEST(Warmup, StopsAtAWarmupTheReplicaCanNeverHold) {
  ManualRuntime rt;
  ManualExecutor ex(&rt, [](const StepBatch&) { return 0.01; });
  Replica r(0, 1, &rt, &ex, sched::SchedulerOptions{}, 1, nullptr);  // one KV block
  WarmupOptions o;
  o.requests = 2;
  o.prompt_tokens = 4096;
  ClusterCounters k;
  Warmup w(&rt, o, &k);
  w.send(&r);
  EXPECT_EQ(k.warmup_requests, 0);
  EXPECT_EQ(r.num_waiting(), 0);
  Sequence client;
  client.req.id = 7;
  EXPECT_FALSE(Warmup::is_warmup(client));
}

}  // namespace
}  // namespace prima::cluster
