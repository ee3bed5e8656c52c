// Priority classes, deadlines, reserved share and priority preemption (recompute and swap).
#include <gtest/gtest.h>

#include "engine/sched/scheduler.h"
#include "tests/engine/sched/sched_test_util.h"

namespace prima::sched {
namespace {

using testutil::contains;
using testutil::make_seq;
using testutil::run_step;

SchedulerOptions prio_opts() {
  SchedulerOptions o;
  o.priority_scheduling = true;
  o.reserved_high_share = 0;
  return o;
}

TEST(Priority, QueueOrderedByClassThenDeadlineThenArrival) {
  kv::BlockManager kv(1000, 16, 0.0);
  Scheduler sch(prio_opts(), &kv);
  auto low = make_seq(1, 10, 5, Priority::kLow, 0.0);
  auto n_nosla = make_seq(2, 10, 5, Priority::kNormal, 0.0);       // deadline: far away
  auto n_late = make_seq(3, 10, 5, Priority::kNormal, 1.0, 5.0);   // deadline 6
  auto n_early = make_seq(4, 10, 5, Priority::kNormal, 2.0, 1.0);  // deadline 3
  auto high = make_seq(5, 10, 5, Priority::kHigh, 3.0);
  auto n_tie = make_seq(6, 10, 5, Priority::kNormal, 2.0, 1.0);  // same deadline as 4: id order
  for (auto* s : {low.get(), n_nosla.get(), n_late.get(), n_early.get(), high.get(), n_tie.get()})
    sch.add(s);
  std::vector<RequestId> order;
  for (const Sequence* s : sch.waiting()) order.push_back(s->req.id);
  EXPECT_EQ(order, (std::vector<RequestId>{5, 4, 6, 3, 2, 1}));
}

TEST(Priority, FifoWhenOff) {
  kv::BlockManager kv(1000, 16, 0.0);
  Scheduler sch(SchedulerOptions{}, &kv);
  auto low = make_seq(1, 10, 5, Priority::kLow);
  auto high = make_seq(2, 10, 5, Priority::kHigh);
  sch.add(low.get());
  sch.add(high.get());
  EXPECT_EQ(sch.waiting().front(), low.get());
}

TEST(Priority, ReservedShareOfSeatsIsForHighOnly) {
  kv::BlockManager kv(1000, 16, 0.0);
  SchedulerOptions o = prio_opts();
  o.max_num_seqs = 10;
  o.reserved_high_share = 0.2;  // 2 seats for the high class
  Scheduler sch(o, &kv);
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 10; ++i) {
    seqs.push_back(make_seq(i + 1, 10, 50));
    sch.add(seqs.back().get());
  }
  auto s1 = run_step(sch, 0);
  EXPECT_EQ(s1.seqs.size(), 8u);  // normal requests stop at 8 of 10
  EXPECT_EQ(sch.num_waiting(), 2u);
  auto h1 = make_seq(100, 10, 5, Priority::kHigh), h2 = make_seq(101, 10, 5, Priority::kHigh);
  sch.add(h1.get());
  sch.add(h2.get());
  auto s2 = run_step(sch, 1);
  EXPECT_TRUE(contains(s2, h1.get()));
  EXPECT_TRUE(contains(s2, h2.get()));
  EXPECT_EQ(sch.num_running(), 10u);
  EXPECT_EQ(sch.total_preemptions(), 0);
}

TEST(Priority, ReservedShareOfBlocksIsForHighOnly) {
  // 10 blocks of 4 tokens; 30% (3 blocks) kept for the high class.
  kv::BlockManager kv(10, 4, 0.0);
  SchedulerOptions o = prio_opts();
  o.reserved_high_share = 0.3;
  Scheduler sch(o, &kv);
  auto a = make_seq(1, 16, 2), b = make_seq(2, 16, 2);  // 4 blocks each
  sch.add(a.get());
  sch.add(b.get());
  auto s1 = sch.schedule(0);
  EXPECT_EQ(s1.seqs.size(), 1u);  // the second would leave 2 < 3 blocks free
  auto h = make_seq(3, 16, 2, Priority::kHigh);
  sch.add(h.get());
  sch.complete(s1, StepResult{}, 0);
  auto s2 = sch.schedule(1);
  EXPECT_TRUE(contains(s2, h.get()));  // the high one may use the reserve
}

TEST(Priority, HighPreemptsLowestClassNewestFirstByRecompute) {
  kv::BlockManager kv(1000, 16, 0.0);
  SchedulerOptions o = prio_opts();
  o.max_num_seqs = 3;
  Scheduler sch(o, &kv);
  auto n1 = make_seq(1, 10, 50), l1 = make_seq(2, 10, 50, Priority::kLow),
       l2 = make_seq(3, 10, 50, Priority::kLow, 0.5);
  sch.add(n1.get());
  sch.add(l1.get());
  sch.add(l2.get());
  run_step(sch, 0);
  run_step(sch, 1);
  ASSERT_EQ(sch.num_running(), 3u);
  auto h = make_seq(4, 10, 5, Priority::kHigh, 2);
  sch.add(h.get());
  auto s = run_step(sch, 2);
  EXPECT_TRUE(contains(s, h.get()));
  EXPECT_EQ(l2->preemptions, 1);  // low class, newest
  EXPECT_EQ(l1->preemptions, 0);
  EXPECT_EQ(n1->preemptions, 0);
  EXPECT_EQ(l2->num_computed, 0);  // recompute
  EXPECT_EQ(sch.priority_preemptions(), 1);
  EXPECT_EQ(s.batch.shape.swap_out_bytes, 0);
}

TEST(Priority, NoPreemptionOfSequencesInFlight) {
  kv::BlockManager kv(1000, 16, 0.0);
  SchedulerOptions o = prio_opts();
  o.max_num_seqs = 1;
  Scheduler sch(o, &kv);
  auto l = make_seq(1, 10, 50, Priority::kLow);
  sch.add(l.get());
  auto s1 = sch.schedule(0);  // l on the devices
  auto h = make_seq(2, 10, 5, Priority::kHigh);
  sch.add(h.get());
  EXPECT_TRUE(sch.schedule(0).empty());
  EXPECT_EQ(l->preemptions, 0);
  sch.complete(s1, StepResult{}, 1);
  auto s2 = sch.schedule(1);
  EXPECT_TRUE(contains(s2, h.get()));
  EXPECT_EQ(l->preemptions, 1);
}

TEST(Priority, SwapPreemptionKeepsProgressAndCarriesBytes) {
  kv::BlockManager kv(1000, 16, 0.0);
  SchedulerOptions o = prio_opts();
  o.max_num_seqs = 1;
  o.preemption_mode = PreemptionMode::kSwap;
  o.kv_bytes_per_token = 1000;
  Scheduler sch(o, &kv);
  auto l = make_seq(1, 40, 50, Priority::kLow);  // 40 tokens: 3 blocks
  sch.add(l.get());
  run_step(sch, 0);  // prefill, one token
  run_step(sch, 1);  // decode: 42 known, 41 computed
  ASSERT_EQ(l->num_computed, 41);
  auto h = make_seq(2, 10, 1, Priority::kHigh);
  sch.add(h.get());
  auto s = sch.schedule(2);
  ASSERT_TRUE(contains(s, h.get()));
  EXPECT_EQ(l->swapped_blocks, 3);
  EXPECT_EQ(l->num_computed, 41);  // progress kept
  EXPECT_DOUBLE_EQ(s.batch.shape.swap_out_bytes, 3 * 16 * 1000.0);
  EXPECT_EQ(sch.swapped_blocks(), 3);
  sch.complete(s, StepResult{}, 3);  // h finishes (one output token)
  auto r = sch.schedule(3);
  ASSERT_TRUE(contains(r, l.get()));
  EXPECT_DOUBLE_EQ(r.batch.shape.swap_in_bytes, 3 * 16 * 1000.0);
  EXPECT_EQ(r.batch.seqs[0].num_tokens, 1);  // resumes decoding where it was
  EXPECT_EQ(r.batch.seqs[0].context_len, 42);
  EXPECT_FALSE(r.batch.seqs[0].is_prefill);
  EXPECT_EQ(sch.swapped_blocks(), 0);
  EXPECT_EQ(sch.swap_outs(), 1);
  EXPECT_EQ(sch.swap_ins(), 1);
}

TEST(Priority, SwapFallsBackToRecomputeWhenHostSpaceIsFull) {
  kv::BlockManager kv(1000, 16, 0.0);
  SchedulerOptions o = prio_opts();
  o.max_num_seqs = 1;
  o.preemption_mode = PreemptionMode::kSwap;
  o.swap_space_blocks = 2;
  Scheduler sch(o, &kv);
  auto l = make_seq(1, 40, 50, Priority::kLow);
  sch.add(l.get());
  run_step(sch, 0);
  auto h = make_seq(2, 10, 1, Priority::kHigh);
  sch.add(h.get());
  auto s = sch.schedule(1);
  ASSERT_TRUE(contains(s, h.get()));
  EXPECT_EQ(l->swapped_blocks, 0);
  EXPECT_EQ(l->num_computed, 0);
}

TEST(Priority, CanEverFitAccountsForTheHighReserve) {
  kv::BlockManager kv(10, 4, 0.0);  // 40 tokens; 5 blocks reserved for the high class
  SchedulerOptions o = prio_opts();
  o.reserved_high_share = 0.5;
  o.max_num_batched_tokens = 32;
  Scheduler sch(o, &kv);
  auto normal = make_seq(1, 24, 4), high = make_seq(2, 24, 4, Priority::kHigh);
  EXPECT_FALSE(sch.can_ever_fit(*normal));  // its first chunk needs 6 > 5 blocks
  EXPECT_TRUE(sch.can_ever_fit(*high));
  auto small = make_seq(3, 16, 20);  // chunk of 16: 4 blocks; whole footprint 9 blocks
  EXPECT_TRUE(sch.can_ever_fit(*small));
  auto huge = make_seq(4, 16, 40, Priority::kHigh);
  EXPECT_FALSE(sch.can_ever_fit(*huge));  // 56 tokens > 40
}

}  // namespace
}  // namespace prima::sched
