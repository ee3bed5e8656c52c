// KvHandoff: the prefill -> decode KV hand-off on its own, against a fake engine (HandoffHost):
// transfers per GPU pair, retries on another decode replica, the failure after the retries,
// re-prefill when no decode replica is left, and a sequence that ends while in transit.
#include "engine/cluster/kv_handoff.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "tests/support/manual_runtime.h"

namespace prima::cluster {
namespace {

using prima::testing::ManualExecutor;
using prima::testing::ManualRuntime;

// Fails the next `fail_next` flows; every flow takes 1 s.
class FlakyFabric : public Fabric {
 public:
  explicit FlakyFabric(ManualRuntime* rt) : rt_(rt) {}
  void transfer(DeviceId from, DeviceId to, Bytes n, std::function<void(Status)> done) override {
    flows.push_back({from, to});
    Status st;
    if (fail_next > 0) {
      --fail_next;
      st = unavailable("link down");
    }
    rt_->at(rt_->now() + 1, [done = std::move(done), st] { done(st); });
  }
  int fail_next = 0;
  std::vector<std::pair<DeviceId, DeviceId>> flows;

 private:
  ManualRuntime* rt_;
};

class FakeEngine final : public HandoffHost {
 public:
  explicit FakeEngine(ManualRuntime* rt) : ex_(rt, [](const StepBatch&) { return 0.01; }) {
    for (ReplicaId id = 0; id < 3; ++id) {
      reps.push_back(
          std::make_unique<Replica>(id, 1, rt, &ex_, sched::SchedulerOptions{}, 1000, nullptr));
      states.push_back(ReplicaState::kActive);
      devices.push_back({{DeviceId(10 + id)}});
    }
    pool = {reps[1].get(), reps[2].get()};  // 0 prefills, 1 and 2 decode
  }
  Sequence* live_sequence(RequestId id) override {
    auto it = live.find(id);
    return it == live.end() ? nullptr : it->second;
  }
  Replica* replica(ReplicaId id) override { return reps[id].get(); }
  ReplicaState replica_state(ReplicaId id) const override { return states[id]; }
  const std::vector<std::vector<DeviceId>>& replica_devices(ReplicaId id) const override {
    return devices[id];
  }
  void maybe_remove(ReplicaId id) override { removed.push_back(id); }
  void maybe_remove_later(ReplicaId id) override { removed_later.push_back(id); }
  void reprefill(Sequence* s) override { reprefilled.push_back(s); }
  void fail(Sequence* s, std::string reason) override { failed.push_back(std::move(reason)); }

  std::vector<std::unique_ptr<Replica>> reps;
  std::vector<ReplicaState> states;
  std::vector<std::vector<std::vector<DeviceId>>> devices;
  std::vector<Replica*> pool;
  std::unordered_map<RequestId, Sequence*> live;
  std::vector<ReplicaId> removed, removed_later;
  std::vector<Sequence*> reprefilled;
  std::vector<std::string> failed;

 private:
  ManualExecutor ex_;
};

struct Fixture {
  ManualRuntime rt;
  Sequence seq;  // outlives the replicas
  ClusterCounters counters;
  FakeEngine eng{&rt};
  FlakyFabric fabric{&rt};
  Router router{RoutingPolicy::kRoundRobin};
  std::unique_ptr<KvHandoff> handoff;

  explicit Fixture(bool reprefill = false, int retries = 2) {
    KvHandoff::Options o;
    o.kv_bytes_per_token = 1000;
    o.max_transfer_retries = retries;
    o.reprefill = reprefill;
    handoff = std::make_unique<KvHandoff>(&rt, &eng, &router, &eng.pool, o, &counters);
    handoff->set_fabric(&fabric);
    seq.req.id = 1;
    seq.req.prompt_tokens = 100;
    seq.req.max_output_tokens = 10;
    eng.live[1] = &seq;
    eng.reps[0]->submit(&seq);  // waiting on the prefill replica (the loop does not run)
    seq.num_computed = 100;
  }
};

TEST(KvHandoff, MovesTheKvToADecodeReplica) {
  Fixture f;
  f.handoff->start(&f.seq);
  EXPECT_EQ(f.eng.reps[0]->num_waiting(), 0);  // off the prefill replica
  EXPECT_EQ(f.eng.removed_later, (std::vector<ReplicaId>{0}));
  EXPECT_TRUE(f.handoff->in_transit(1));
  ASSERT_EQ(f.fabric.flows.size(), 1u);
  const ReplicaId dst = f.fabric.flows[0].second - 10;
  EXPECT_EQ(f.handoff->heading_to(dst), 1);
  f.rt.run_until_idle();
  EXPECT_FALSE(f.handoff->in_transit(1));
  EXPECT_EQ(f.handoff->heading_to(dst), 0);
  EXPECT_EQ(f.seq.replica, dst);
  EXPECT_EQ(f.counters.handoffs, 1);
  EXPECT_EQ(f.counters.handoff_retries, 0);
  EXPECT_DOUBLE_EQ(f.counters.handoff_bytes, 100 * 1000.0);
  EXPECT_TRUE(f.eng.failed.empty());
}

TEST(KvHandoff, RetriesOnAnotherDecodeReplicaThenFails) {
  Fixture f(/*reprefill=*/false, /*retries=*/1);
  f.fabric.fail_next = 2;
  f.handoff->start(&f.seq);
  f.rt.run_until_idle();
  ASSERT_EQ(f.fabric.flows.size(), 2u);
  EXPECT_NE(f.fabric.flows[0].second, f.fabric.flows[1].second);  // the other replica
  EXPECT_EQ(f.counters.handoffs, 2);
  EXPECT_EQ(f.counters.handoff_retries, 2);
  EXPECT_EQ(f.counters.handoff_failures, 1);
  ASSERT_EQ(f.eng.failed.size(), 1u);
  EXPECT_EQ(f.eng.failed[0], "KV hand-off failed after 2 attempts: link down");
  EXPECT_FALSE(f.handoff->in_transit(1));
}

TEST(KvHandoff, ReprefillsWhenEveryDecodeReplicaWasTried) {
  Fixture f(/*reprefill=*/true);
  f.fabric.fail_next = 2;
  f.handoff->start(&f.seq);
  f.rt.run_until_idle();
  ASSERT_EQ(f.eng.reprefilled.size(), 1u);
  EXPECT_EQ(f.seq.num_computed, 0);
  EXPECT_EQ(f.counters.handoff_failures, 0);
  EXPECT_TRUE(f.eng.failed.empty());
}

TEST(KvHandoff, ADecodeReplicaThatWentDownCountsAsAFailedTransfer) {
  Fixture f;
  f.handoff->start(&f.seq);
  const ReplicaId dst = f.fabric.flows[0].second - 10;
  f.eng.states[dst] = ReplicaState::kUnhealthy;
  f.rt.run_until_idle();
  EXPECT_EQ(f.counters.handoff_retries, 1);
  ASSERT_EQ(f.fabric.flows.size(), 2u);
  EXPECT_NE(f.seq.replica, dst);
  EXPECT_FALSE(f.handoff->in_transit(1));
}

TEST(KvHandoff, ASequenceThatEndedInTransitIsDroppedAndItsTargetMayBeRemoved) {
  Fixture f;
  f.handoff->start(&f.seq);
  const ReplicaId dst = f.fabric.flows[0].second - 10;
  f.eng.live.clear();  // cancelled meanwhile
  f.rt.run_until_idle();
  EXPECT_EQ(f.eng.removed, (std::vector<ReplicaId>{dst}));
  EXPECT_FALSE(f.handoff->in_transit(1));
  EXPECT_EQ(f.eng.reps[dst]->num_waiting(), 0);
}

TEST(KvHandoff, FailsWhenNoDecodeReplicaCanHoldTheSequence) {
  Fixture f;
  f.eng.pool.clear();
  f.handoff->start(&f.seq);
  ASSERT_EQ(f.eng.failed.size(), 1u);
  EXPECT_EQ(f.eng.failed[0], "no decode replica can hold the sequence");
  EXPECT_FALSE(f.handoff->in_transit(1));
}

}  // namespace
}  // namespace prima::cluster
