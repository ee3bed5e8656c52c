#include "engine/cluster/router.h"

#include <gtest/gtest.h>

#include <memory>

#include "tests/support/manual_runtime.h"

namespace prima::cluster {
namespace {

using prima::testing::ManualExecutor;
using prima::testing::ManualRuntime;

// Replicas whose load is set by submitting sequences (the runtime never runs).
struct Fleet {
  explicit Fleet(int n) : ex(&rt, [](const StepBatch&) { return 0.01; }) {
    for (int i = 0; i < n; ++i) {
      reps.push_back(
          std::make_unique<Replica>(i, 1, &rt, &ex, sched::SchedulerOptions{}, 100000, nullptr));
      ptrs.push_back(reps.back().get());
    }
  }
  void load(int i, int tokens) {
    seqs.push_back(std::make_unique<Sequence>());
    seqs.back()->req.prompt_tokens = tokens;
    seqs.back()->req.max_output_tokens = 0;
    reps[i]->submit(seqs.back().get());
  }
  ManualRuntime rt;
  ManualExecutor ex;
  std::vector<std::unique_ptr<Replica>> reps;
  std::vector<Replica*> ptrs;
  std::vector<std::unique_ptr<Sequence>> seqs;
};

Sequence seq(std::uint64_t group, int prompt = 10) {
  Sequence s;
  s.req.prompt_tokens = prompt;
  s.req.max_output_tokens = 1;
  s.req.prefix_group = group;
  s.req.prefix_tokens = prompt;
  return s;
}

TEST(Router, ParsesEveryPolicyName) {
  for (const auto& n : routing_policy_names()) {
    RoutingPolicy p;
    EXPECT_TRUE(parse_routing_policy(n, &p)) << n;
  }
  RoutingPolicy p;
  EXPECT_FALSE(parse_routing_policy("random", &p));
}

TEST(Router, PowerOfTwoIsDeterministicPerSeed) {
  Fleet f(32);
  for (int i = 0; i < 32; ++i) f.load(i, 100 + i);
  auto picks = [&](std::uint64_t seed) {
    Router r(RoutingPolicy::kPowerOfTwo, seed);
    std::vector<int> out;
    Sequence s = seq(0);
    for (int k = 0; k < 64; ++k) out.push_back(r.pick(f.ptrs, s));
    return out;
  };
  EXPECT_EQ(picks(7), picks(7));
  EXPECT_NE(picks(7), picks(8));
}

TEST(Router, PowerOfTwoPrefersTheLessLoadedOfTwo) {
  Fleet f(2);
  f.load(0, 1000);
  f.load(1, 10);
  Router r(RoutingPolicy::kPowerOfTwo, 3);
  Sequence s = seq(0);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(r.pick(f.ptrs, s), 1);  // two of two: always both
}

TEST(Router, PowerOfTwoSpreadsOverManyReplicas) {
  Fleet f(8);
  Router r(RoutingPolicy::kPowerOfTwo, 1);
  std::vector<int> hits(8, 0);
  Sequence s = seq(0);
  for (int k = 0; k < 800; ++k) ++hits[r.pick(f.ptrs, s)];  // equal loads: first draw wins
  for (int h : hits) EXPECT_GT(h, 50);
}

TEST(Router, PrefixAffinityKeepsAGroupOnOneReplica) {
  Fleet f(4);
  Router r(RoutingPolicy::kPrefixAffinity, 1, 1000);
  Sequence a = seq(42);
  const int first = r.pick(f.ptrs, a);
  f.load(first, 500);  // within the slack of the least loaded (0)
  EXPECT_EQ(r.pick(f.ptrs, a), first);
  EXPECT_EQ(r.pick(f.ptrs, a), first);
  // Another group goes to the least loaded replica, not to `first`.
  Sequence b = seq(7);
  EXPECT_NE(r.pick(f.ptrs, b), first);
}

TEST(Router, PrefixAffinityLeavesAnOverloadedReplica) {
  Fleet f(3);
  Router r(RoutingPolicy::kPrefixAffinity, 1, 1000);
  Sequence a = seq(42);
  const int first = r.pick(f.ptrs, a);
  f.load(first, 5000);  // beyond least loaded + slack
  const int moved = r.pick(f.ptrs, a);
  EXPECT_NE(moved, first);
  EXPECT_EQ(r.pick(f.ptrs, a), moved);  // the group follows to its new replica
}

TEST(Router, NoGroupMeansLeastLoaded) {
  Fleet f(3);
  f.load(0, 300);
  f.load(1, 100);
  f.load(2, 200);
  Router r(RoutingPolicy::kPrefixAffinity);
  Sequence s = seq(0);
  EXPECT_EQ(r.pick(f.ptrs, s), 1);
}

}  // namespace
}  // namespace prima::cluster
