// PendingQueue: requests waiting for a healthy replica, by priority class then FIFO, each
// for at most timeout_s.
#include "engine/cluster/pending_queue.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/support/manual_runtime.h"

namespace prima::cluster {
namespace {

using prima::testing::ManualExecutor;
using prima::testing::ManualRuntime;

Sequence seq(RequestId id, Priority priority) {
  Sequence s;
  s.req.id = id;
  s.req.priority = priority;
  s.req.prompt_tokens = 8;
  s.req.max_output_tokens = 1;
  return s;
}

TEST(PendingQueue, DrainsByPriorityThenArrivalAndKeepsTheRestInOrder) {
  ManualRuntime rt;
  PendingQueue q(&rt, 10, [](Sequence*) { FAIL() << "no timeout expected"; });
  Sequence a = seq(1, Priority::kNormal), b = seq(2, Priority::kHigh),
           c = seq(3, Priority::kNormal), d = seq(4, Priority::kHigh);
  for (Sequence* s : {&a, &b, &c, &d}) q.add(s);
  EXPECT_EQ(q.size(), 4);
  std::vector<RequestId> offered;
  q.drain([&](const Sequence& s) -> Replica* {
    offered.push_back(s.req.id);
    return nullptr;  // nowhere to go: all stay
  });
  EXPECT_EQ(offered, (std::vector<RequestId>{2, 4, 1, 3}));
  EXPECT_EQ(q.size(), 4);

  ManualExecutor ex(&rt, [](const StepBatch&) { return 0.01; });
  Replica r(0, 1, &rt, &ex, sched::SchedulerOptions{}, 100, nullptr);
  offered.clear();
  q.drain([&](const Sequence& s) -> Replica* {
    offered.push_back(s.req.id);
    return s.req.id == 4 ? &r : nullptr;
  });
  EXPECT_EQ(offered, (std::vector<RequestId>{2, 4, 1, 3}));
  EXPECT_EQ(q.size(), 3);
  EXPECT_EQ(r.num_waiting(), 1);
  offered.clear();
  q.drain([&](const Sequence& s) -> Replica* {
    offered.push_back(s.req.id);
    return nullptr;
  });
  EXPECT_EQ(offered, (std::vector<RequestId>{2, 1, 3}));
  q.clear();
  EXPECT_TRUE(q.empty());
  rt.run_until_idle();  // the drained request's timer was cancelled with the others
}

TEST(PendingQueue, TimesOutOnceAndRemoveCancelsTheTimer) {
  ManualRuntime rt;
  std::vector<RequestId> timed_out;
  PendingQueue q(&rt, 5, [&](Sequence* s) {
    timed_out.push_back(s->req.id);
    EXPECT_EQ(rt.now(), 5);
  });
  Sequence a = seq(1, Priority::kNormal), b = seq(2, Priority::kNormal);
  q.add(&a);
  q.add(&b);
  EXPECT_TRUE(q.remove(2));
  EXPECT_FALSE(q.remove(2));
  rt.advance_to(4.9);
  EXPECT_TRUE(timed_out.empty());
  rt.run_until_idle();
  EXPECT_EQ(timed_out, (std::vector<RequestId>{1}));
  EXPECT_TRUE(q.empty());
  EXPECT_EQ(rt.pending(), 0u);
}

TEST(PendingQueue, DestructionCancelsTheTimers) {
  ManualRuntime rt;
  Sequence a = seq(1, Priority::kNormal);
  {
    PendingQueue q(&rt, 5, [](Sequence*) { FAIL() << "destroyed queue timed out"; });
    q.add(&a);
    EXPECT_EQ(rt.pending(), 1u);
  }
  EXPECT_EQ(rt.pending(), 0u);
}

}  // namespace
}  // namespace prima::cluster
