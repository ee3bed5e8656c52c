// Long-prompt queue, prefill/decode budgets, dynamic batching, prefix caching through the
// scheduler, compaction every N requests.
#include <gtest/gtest.h>

#include "engine/sched/scheduler.h"
#include "tests/engine/sched/sched_test_util.h"

namespace prima::sched {
namespace {

using testutil::contains;
using testutil::make_seq;
using testutil::run_step;

TEST(LongPromptQueue, ShortRequestsKeepFlowingBesideALongPrompt) {
  kv::BlockManager kv(10000, 16, 0.0);
  SchedulerOptions o;
  o.max_num_batched_tokens = 1000;
  o.long_prompt_queue = true;
  o.long_prompt_threshold = 512;
  o.long_prompt_budget_share = 0.25;
  Scheduler sch(o, &kv);
  auto doc = make_seq(1, 8000, 5);
  sch.add(doc.get());
  auto s1 = run_step(sch, 0);  // alone: work-conserving, the whole budget
  ASSERT_EQ(s1.batch.seqs[0].num_tokens, 1000);
  EXPECT_EQ(sch.long_waiting().size(), 0u);
  std::vector<std::unique_ptr<Sequence>> shorts;
  for (int i = 0; i < 3; ++i) {
    shorts.push_back(make_seq(10 + i, 300, 5));
    sch.add(shorts.back().get());
  }
  auto s2 = run_step(sch, 1);
  // The long prefill gets 250 tokens; the short ones share the rest, first come first.
  ASSERT_TRUE(contains(s2, doc.get()));
  EXPECT_EQ(s2.batch.seqs[0].num_tokens, 250);
  EXPECT_TRUE(contains(s2, shorts[0].get()));
  EXPECT_TRUE(contains(s2, shorts[1].get()));
  EXPECT_TRUE(contains(s2, shorts[2].get()));
  EXPECT_EQ(shorts[2]->num_computed, 150);  // 750 - 600: chunked
}

TEST(LongPromptQueue, LongPromptsWaitInTheirOwnQueueBehindShortOnes) {
  kv::BlockManager kv(10000, 16, 0.0);
  SchedulerOptions o;
  o.max_num_batched_tokens = 400;
  o.long_prompt_queue = true;
  Scheduler sch(o, &kv);
  auto doc = make_seq(1, 4000, 5);
  auto a = make_seq(2, 300, 5), b = make_seq(3, 300, 5);
  sch.add(doc.get());
  sch.add(a.get());
  sch.add(b.get());
  EXPECT_EQ(sch.long_waiting().size(), 1u);
  EXPECT_EQ(sch.waiting().size(), 2u);
  EXPECT_EQ(sch.num_waiting(), 3u);
  auto s1 = sch.schedule(0);
  EXPECT_EQ(s1.seqs[0], a.get());  // although the document arrived first
  EXPECT_FALSE(contains(s1, doc.get()));
}

TEST(LongPromptQueue, WithoutTheQueueALongPromptTakesTheWholeBudget) {
  kv::BlockManager kv(10000, 16, 0.0);
  SchedulerOptions o;
  o.max_num_batched_tokens = 1000;
  Scheduler sch(o, &kv);
  auto doc = make_seq(1, 8000, 5), a = make_seq(2, 200, 5);
  sch.add(doc.get());
  sch.add(a.get());
  auto s1 = run_step(sch, 0);
  EXPECT_EQ(s1.seqs.size(), 1u);
  auto s2 = run_step(sch, 1);
  EXPECT_FALSE(contains(s2, a.get()));  // stalled behind the document
}

TEST(PdBudgets, PrefillTokensAndDecodeSeqsAreCappedSeparately) {
  kv::BlockManager kv(10000, 16, 0.0);
  SchedulerOptions o;
  o.max_num_batched_tokens = 1000;
  o.max_prefill_tokens_per_step = 100;
  o.max_decode_seqs_per_step = 2;
  Scheduler sch(o, &kv);
  std::vector<std::unique_ptr<Sequence>> d;
  for (int i = 0; i < 3; ++i) {
    d.push_back(make_seq(i + 1, 30, 10));
    sch.add(d.back().get());
  }
  auto s1 = run_step(sch, 0);
  EXPECT_EQ(s1.batch.shape.prefill_tokens, 90);
  auto p = make_seq(9, 500, 5);
  sch.add(p.get());
  auto s2 = run_step(sch, 1);
  EXPECT_EQ(s2.batch.shape.decode_tokens, 2);     // 3 decoding, 2 allowed
  EXPECT_EQ(s2.batch.shape.prefill_tokens, 100);  // of the 500-token prompt
  auto s3 = run_step(sch, 2);
  EXPECT_EQ(s3.batch.shape.decode_tokens, 2);
  EXPECT_TRUE(contains(s3, d[2].get()));  // the one left out goes first next time
}

SchedulerOptions dyn_opts() {
  SchedulerOptions o;
  o.type = SchedulerType::kDynamicBatching;
  o.max_batch_size = 4;
  o.batch_timeout_s = 0.05;
  return o;
}

TEST(DynamicBatching, WaitsForTheTimeoutThenRunsTheBatchToCompletion) {
  kv::BlockManager kv(1000, 16, 0.0);
  SchedulerOptions o = dyn_opts();
  o.batch_timeout_s = 0.5;
  Scheduler sch(o, &kv);
  auto a = make_seq(1, 10, 2, Priority::kNormal, 0.0);
  auto b = make_seq(2, 10, 3, Priority::kNormal, 0.125);
  EXPECT_EQ(sch.next_wakeup(), Scheduler::kNever);  // nothing waits
  sch.add(a.get());
  sch.add(b.get());
  EXPECT_TRUE(sch.schedule(0.25).empty());
  EXPECT_EQ(sch.next_wakeup(), 0.5);  // the oldest arrived at 0
  auto s1 = run_step(sch, 0.5);
  EXPECT_EQ(s1.seqs.size(), 2u);
  EXPECT_EQ(sch.batches_formed(), 1);
  EXPECT_EQ(sch.next_wakeup(), Scheduler::kNever);  // a batch runs
  auto c = make_seq(3, 10, 2, Priority::kNormal, 0.625);
  sch.add(c.get());
  auto s2 = run_step(sch, 0.75);  // a finishes here; b still runs; c is not admitted
  EXPECT_FALSE(contains(s2, c.get()));
  auto s3 = run_step(sch, 0.875);  // b finishes
  EXPECT_EQ(s3.seqs.size(), 1u);
  EXPECT_EQ(sch.num_running(), 0u);
  EXPECT_EQ(sch.next_wakeup(), 1.125);
  EXPECT_TRUE(sch.schedule(0.875).empty());
  auto s4 = sch.schedule(1.125);
  EXPECT_TRUE(contains(s4, c.get()));
}

TEST(DynamicBatching, FormsAtOnceWhenMaxBatchSizeOrAPreferredSizeWaits) {
  kv::BlockManager kv(1000, 16, 0.0);
  SchedulerOptions o = dyn_opts();
  o.preferred_batch_sizes = {2};
  Scheduler sch(o, &kv);
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 7; ++i) seqs.push_back(make_seq(i + 1, 10, 1));
  sch.add(seqs[0].get());
  EXPECT_TRUE(sch.schedule(0).empty());
  sch.add(seqs[1].get());
  auto s1 = run_step(sch, 0);  // preferred size 2 reached
  EXPECT_EQ(s1.seqs.size(), 2u);
  for (int i = 2; i < 7; ++i) sch.add(seqs[i].get());
  auto s2 = run_step(sch, 0);  // 5 waiting: max_batch_size 4
  EXPECT_EQ(s2.seqs.size(), 4u);
  EXPECT_EQ(sch.num_waiting(), 1u);
}

TEST(DynamicBatching, SizeAwareGroupsSimilarLengthsAroundTheOldest) {
  kv::BlockManager kv(10000, 16, 0.0);
  SchedulerOptions o = dyn_opts();
  o.max_batch_size = 3;
  o.strategies = {BatchStrategy::kFillFifo, BatchStrategy::kSizeAware};
  Scheduler sch(o, &kv);
  const int lens[] = {100, 1000, 110, 990, 95, 1010, 500};
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 7; ++i) {
    seqs.push_back(make_seq(i + 1, lens[i], 1, Priority::kNormal, 0.001 * i));
    sch.add(seqs.back().get());
  }
  auto s = sch.schedule(0.01);
  ASSERT_EQ(s.seqs.size(), 3u);
  EXPECT_TRUE(contains(s, seqs[0].get()));  // the oldest (100)
  EXPECT_TRUE(contains(s, seqs[2].get()));  // 110
  EXPECT_TRUE(contains(s, seqs[4].get()));  // 95

  kv::BlockManager kv2(10000, 16, 0.0);
  o.strategies = {BatchStrategy::kFillFifo};
  Scheduler fifo(o, &kv2);
  for (auto& q : seqs) {
    q->num_computed = 0;
    q->running = false;
    q->in_flight = false;
    q->blocks.clear();
    fifo.add(q.get());
  }
  auto f = fifo.schedule(0.01);
  ASSERT_EQ(f.seqs.size(), 3u);
  EXPECT_TRUE(contains(f, seqs[1].get()));  // arrival order: 100, 1000, 110
}

TEST(CapacityPolicy, NoEvictAdmitsOnlyWhatCanFinishAndNeverPreempts) {
  // 12 blocks of 4 tokens; each request needs 2 blocks for its prompt and 5 to finish
  // (8 prompt + 12 output tokens).
  auto run = [](CapacityPolicy policy, int* admitted_first, int* preemptions) {
    kv::BlockManager kv(12, 4, 0.0);
    SchedulerOptions o;
    o.capacity_policy = policy;
    Scheduler sch(o, &kv);
    std::vector<std::unique_ptr<Sequence>> seqs;
    for (int i = 0; i < 5; ++i) {
      seqs.push_back(make_seq(i + 1, 8, 12));
      sch.add(seqs.back().get());
    }
    int finished = 0;
    for (int t = 0; t < 200 && finished < 5; ++t) {
      const ScheduledStep st = sch.schedule(t);
      if (t == 0) *admitted_first = static_cast<int>(st.seqs.size());
      if (st.empty()) continue;
      finished += static_cast<int>(sch.complete(st, StepResult{}, t).finished.size());
    }
    EXPECT_EQ(finished, 5);
    EXPECT_EQ(kv.free_blocks(), 12);
    *preemptions = static_cast<int>(sch.total_preemptions());
  };
  int first = 0, preempted = 0;
  run(CapacityPolicy::kMaxUtilization, &first, &preempted);
  EXPECT_EQ(first, 5);  // every prompt's 2 blocks fit (10 of 12)
  EXPECT_GT(preempted, 0);
  run(CapacityPolicy::kGuaranteedNoEvict, &first, &preempted);
  EXPECT_EQ(first, 2);  // 2 x 5 blocks reserved; a third would need 15
  EXPECT_EQ(preempted, 0);
}

TEST(CapacityPolicy, NoEvictCountsWhatRunningSequencesStillNeed) {
  // 10 blocks of 4 tokens. a (4 prompt + 12 output tokens: 4 blocks to finish) runs; b (4 + 20:
  // 6 blocks) fits beside a's whole footprint, c (4 + 4: 2 blocks) then does not, until a
  // finishes. Admission stops at c: it is first-come, first-served.
  kv::BlockManager kv(10, 4, 0.0);
  SchedulerOptions o;
  o.capacity_policy = CapacityPolicy::kGuaranteedNoEvict;
  Scheduler sch(o, &kv);
  auto a = make_seq(1, 4, 12), b = make_seq(2, 4, 20), c = make_seq(3, 4, 4);
  sch.add(a.get());
  ScheduledStep st = run_step(sch, 0);
  ASSERT_TRUE(contains(st, a.get()));
  EXPECT_EQ(kv.free_blocks(), 9);  // a holds 1 block now, 3 more reserved
  sch.add(b.get());
  sch.add(c.get());
  st = run_step(sch, 1);
  EXPECT_TRUE(contains(st, b.get()));
  EXPECT_FALSE(contains(st, c.get()));
  int t = 2;
  while (a->finish_reason.empty() && t < 100) run_step(sch, t++);
  ASSERT_EQ(a->finish_reason, "length");
  st = run_step(sch, t);
  EXPECT_TRUE(contains(st, c.get()));
  EXPECT_EQ(sch.total_preemptions(), 0);
}

TEST(PrefixCache, HitsSkipComputationAndShareBlocks) {
  kv::BlockManager kv(100, 16, 0.0);
  SchedulerOptions o;
  o.enable_prefix_caching = true;
  Scheduler sch(o, &kv);
  auto a = make_seq(1, 100, 2), b = make_seq(2, 100, 2);
  for (auto* s : {a.get(), b.get()}) {
    s->req.prefix_group = 7;
    s->req.prefix_tokens = 64;
  }
  sch.add(a.get());
  run_step(sch, 0);  // a computes its prompt; 4 full prefix blocks get cached
  sch.add(b.get());
  auto s = sch.schedule(1);
  ASSERT_TRUE(contains(s, b.get()));
  const SeqWork& w = s.batch.seqs.back();
  EXPECT_EQ(w.num_tokens, 100 - 64);  // the prefix was not computed again
  EXPECT_EQ(w.context_len, 100);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(a->blocks[i], b->blocks[i]);
    EXPECT_EQ(kv.ref_count(a->blocks[i]), 2);
  }
  EXPECT_EQ(kv.prefix_lookups(), 2);
  EXPECT_EQ(kv.prefix_hit_tokens(), 64);
  EXPECT_DOUBLE_EQ(kv.prefix_hit_rate(), 64.0 / 200);
  // Metrics count the shared blocks once: a holds 100 computed tokens in 7 blocks, b shares
  // its 64 and got 3 blocks for the 36 it computes in this (in-flight) step.
  EXPECT_EQ(sch.tokens_in_kv(), 100);
  EXPECT_EQ(kv.used_blocks(), 10);
  EXPECT_DOUBLE_EQ(kv.internal_fragmentation(sch.tokens_in_kv()), 1 - 100.0 / 160);
  EXPECT_DOUBLE_EQ(sch.kv_token_utilization(), 100.0 / 1600);
}

TEST(PrefixCache, OffByDefault) {
  kv::BlockManager kv(100, 16, 0.0);
  Scheduler sch(SchedulerOptions{}, &kv);
  auto a = make_seq(1, 100, 2), b = make_seq(2, 100, 2);
  for (auto* s : {a.get(), b.get()}) {
    s->req.prefix_group = 7;
    s->req.prefix_tokens = 64;
  }
  sch.add(a.get());
  run_step(sch, 0);
  sch.add(b.get());
  auto s = sch.schedule(1);
  EXPECT_EQ(s.batch.seqs.back().num_tokens, 100);
  EXPECT_EQ(kv.prefix_lookups(), 0);
}

TEST(Compaction, EveryNFinishedRequests) {
  kv::BlockManager kv(100, 16, 0.0);
  SchedulerOptions o;
  o.enable_prefix_caching = true;
  o.compact_every_requests = 2;
  Scheduler sch(o, &kv);
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 2; ++i) {
    seqs.push_back(make_seq(i + 1, 40, 1));
    seqs.back()->req.prefix_group = 1;
    seqs.back()->req.prefix_tokens = 32;
  }
  sch.add(seqs[0].get());
  run_step(sch, 0);  // finishes: its 2 prefix blocks stay cached (evictable)
  EXPECT_EQ(kv.cached_blocks(), 2);
  EXPECT_EQ(kv.compactions(), 0);
  sch.add(seqs[1].get());
  run_step(sch, 1);  // second finished request: compaction drops the cache
  EXPECT_EQ(kv.compactions(), 1);
  EXPECT_EQ(kv.cached_blocks(), 0);
  EXPECT_EQ(kv.free_blocks(), 100);
  EXPECT_EQ(kv.prefix_hit_tokens(), 32);
}

}  // namespace
}  // namespace prima::sched
