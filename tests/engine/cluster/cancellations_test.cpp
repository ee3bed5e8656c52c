// Cancellations on their own, against a fake engine (CancelHost): a request leaves once,
// from wherever it is, and one on the devices leaves when its step returns.
#include "engine/cluster/cancellations.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "tests/support/manual_runtime.h"

namespace prima::cluster {
namespace {

using prima::testing::ManualExecutor;
using prima::testing::ManualRuntime;

struct Ended {
  RequestId id;
  Outcome outcome;
  std::string reason, finish_reason;
};

class FakeEngine final : public CancelHost {
 public:
  explicit FakeEngine(ManualRuntime* rt)
      : ex_(rt, [](const StepBatch&) { return 0.01; }),
        rep_(0, 1, rt, &ex_, sched::SchedulerOptions{}, 1000, nullptr) {}
  Sequence* live_sequence(RequestId id) override {
    auto it = live.find(id);
    return it == live.end() ? nullptr : it->second;
  }
  Replica* replica(ReplicaId id) override { return &rep_; }
  int num_replicas() const override { return 1; }
  bool leave_pending(RequestId id) override { return pending.erase(id) > 0; }
  bool in_handoff(RequestId id) const override { return handoff.count(id) > 0; }
  void end(Sequence* s, Outcome o, std::string reason) override {
    ended.push_back({s->req.id, o, reason, s->finish_reason});
    live.erase(s->req.id);
  }
  Replica& rep() { return rep_; }

  std::unordered_map<RequestId, Sequence*> live;
  std::set<RequestId> pending, handoff;
  std::vector<Ended> ended;

 private:
  ManualExecutor ex_;
  Replica rep_;
};

Sequence seq(RequestId id) {
  Sequence s;
  s.req.id = id;
  s.req.prompt_tokens = 16;
  s.req.max_output_tokens = 4;
  return s;
}

TEST(Cancellations, LeavesFromThePendingQueueTheHandoffOrItsReplicaQueue) {
  ManualRuntime rt;
  Sequence a = seq(1), b = seq(2), c = seq(3);
  FakeEngine eng(&rt);
  Cancellations cx(&rt, &eng);
  for (Sequence* s : {&a, &b, &c}) eng.live[s->req.id] = s;
  eng.pending.insert(1);
  eng.handoff.insert(2);
  eng.rep().submit(&c);  // queued, not on the devices (the loop has not run)
  EXPECT_FALSE(cx.take_out(9, {Outcome::kFailed, "gone"}));
  EXPECT_TRUE(cx.take_out(1, {Outcome::kFailed, "gone"}));
  EXPECT_TRUE(cx.take_out(2, {Outcome::kCompleted, ""}));
  EXPECT_TRUE(cx.take_out(3, {Outcome::kFailed, "gone"}));
  EXPECT_FALSE(cx.take_out(3, {Outcome::kFailed, "again"}));  // ended: not in the system
  ASSERT_EQ(eng.ended.size(), 3u);
  EXPECT_TRUE(eng.pending.empty());
  EXPECT_EQ(eng.ended[1].outcome, Outcome::kCompleted);
  EXPECT_EQ(eng.ended[1].finish_reason, "stop");
  EXPECT_EQ(eng.ended[2].reason, "gone");
  EXPECT_EQ(eng.rep().num_waiting(), 0);
  EXPECT_TRUE(cx.empty());
}

TEST(Cancellations, OneOnTheDevicesLeavesWhenItsStepReturns) {
  ManualRuntime rt;
  Sequence a = seq(1);
  FakeEngine eng(&rt);
  Cancellations cx(&rt, &eng);
  eng.live[1] = &a;
  eng.rep().submit(&a);
  a.in_flight = true;  // as if its step were on the devices
  EXPECT_TRUE(cx.take_out(1, {Outcome::kFailed, "client disconnected"}));
  EXPECT_TRUE(cx.take_out(1, {Outcome::kFailed, "twice"}));  // already on its way out
  EXPECT_TRUE(cx.leaving(1));
  EXPECT_TRUE(eng.ended.empty());
  a.in_flight = false;  // the step returned
  cx.on_step(&eng.rep(), {&a});
  EXPECT_EQ(eng.rep().num_waiting() + eng.rep().num_running(), 0);
  EXPECT_TRUE(eng.ended.empty());  // ended on the next turn of the loop
  rt.run_until_idle();
  ASSERT_EQ(eng.ended.size(), 1u);
  EXPECT_EQ(eng.ended[0].reason, "client disconnected");
  EXPECT_TRUE(cx.empty());
}

TEST(Cancellations, AStepThatFinishesAMarkedSequenceEndsItTheWayItLeft) {
  ManualRuntime rt;
  Sequence a = seq(1);
  FakeEngine eng(&rt);
  Cancellations cx(&rt, &eng);
  eng.live[1] = &a;
  a.replica = 0;
  a.in_flight = true;
  EXPECT_TRUE(cx.take_out(1, {Outcome::kCompleted, ""}));
  Sequence other = seq(2);
  EXPECT_FALSE(cx.on_finished(&other));
  EXPECT_TRUE(cx.on_finished(&a));
  ASSERT_EQ(eng.ended.size(), 1u);
  EXPECT_EQ(eng.ended[0].finish_reason, "stop");
  EXPECT_FALSE(cx.leaving(1));
}

}  // namespace
}  // namespace prima::cluster
