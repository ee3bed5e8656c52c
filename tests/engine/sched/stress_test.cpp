// Randomized invariants with every policy on (priorities, swap, long-prompt queue, P/D
// budgets, prefix cache, compaction): no sequence is lost, KV blocks and host swap space are
// conserved, every request finishes; and dynamic batching driven by a timer on the manual
// clock the way a Replica drives it (schedule, else arm a timer at next_wakeup()).
#include <gtest/gtest.h>

#include <cstdio>
#include <random>

#include "engine/sched/scheduler.h"
#include "tests/engine/sched/sched_test_util.h"
#include "tests/support/manual_runtime.h"

namespace prima::sched {
namespace {

using testutil::make_seq;

void check_blocks(const kv::BlockManager& kv, const Scheduler& sch) {
  // Distinct blocks held by running sequences = used blocks; waiting ones hold none.
  std::vector<int> held;
  for (const Sequence* s : sch.running())
    held.insert(held.end(), s->blocks.begin(), s->blocks.end());
  std::sort(held.begin(), held.end());
  held.erase(std::unique(held.begin(), held.end()), held.end());
  EXPECT_EQ(static_cast<int>(held.size()), kv.used_blocks());
  for (const auto* q : {&sch.waiting(), &sch.long_waiting()})
    for (const Sequence* s : *q) EXPECT_TRUE(s->blocks.empty());
}

struct Stats {
  std::int64_t preemptions = 0, swap_outs = 0, prefix_hits = 0, batches = 0;
};

Stats stress(SchedulerOptions o, unsigned seed, int kv_blocks) {
  Stats st;
  std::mt19937_64 rng(seed);
  kv::BlockManager kv(kv_blocks, o.block_size, o.watermark);
  Scheduler sch(o, &kv);
  std::vector<std::unique_ptr<Sequence>> seqs;
  int done = 0;
  Time t = 0;
  std::vector<ScheduledStep> inflight;
  for (int iter = 0; iter < 3000 || done < static_cast<int>(seqs.size()); ++iter) {
    EXPECT_LT(iter, 200000) << "no progress";
    if (iter >= 200000) return st;
    t += 0.01;
    if (iter < 3000 && rng() % 3 == 0) {
      const int prompt = rng() % 10 == 0 ? 600 + int(rng() % 600) : 10 + int(rng() % 120);
      auto s = make_seq(RequestId(seqs.size() + 1), prompt, 1 + int(rng() % 20),
                        static_cast<Priority>(rng() % 3), t, rng() % 2 ? 0.5 : 0);
      s->req.prefix_group = rng() % 4;
      s->req.prefix_tokens = int(rng() % 64);
      sch.add(s.get());
      seqs.push_back(std::move(s));
    }
    // Up to two steps in flight (pipelining); complete the oldest, sometimes as a failure.
    if (inflight.size() < 2) {
      ScheduledStep st = sch.schedule(t);
      if (!st.empty()) inflight.push_back(std::move(st));
    }
    if (!inflight.empty() && (inflight.size() == 2 || rng() % 2)) {
      StepResult r;
      if (rng() % 50 == 0) r.status = unavailable("flaky");
      StepOutcome out = sch.complete(inflight.front(), r, t);
      inflight.erase(inflight.begin());
      done += static_cast<int>(out.finished.size() + out.failed.size());
      for (Sequence* s : out.finished) s->outcome = Outcome::kCompleted;
      for (Sequence* s : out.failed) s->outcome = Outcome::kFailed;
    }
    if (inflight.empty()) check_blocks(kv, sch);
    EXPECT_EQ(done + sch.num_waiting() + sch.num_running(), seqs.size());
  }
  EXPECT_EQ(kv.used_blocks(), 0);
  EXPECT_EQ(sch.swapped_blocks(), 0);
  EXPECT_EQ(kv.shared_extra_refs(), 0);
  for (int b = 0; b < kv.num_blocks(); ++b) EXPECT_EQ(kv.ref_count(b), 0);
  st.preemptions = sch.total_preemptions();
  st.swap_outs = sch.swap_outs();
  st.prefix_hits = kv.prefix_hits();
  st.batches = sch.batches_formed();
  std::printf(
      "seed %u: %zu requests, %lld preemptions, %lld swap-outs, %lld prefix hits, %lld batches, "
      "hit rate %.3f\n",
      seed, seqs.size(), (long long)st.preemptions, (long long)st.swap_outs,
      (long long)st.prefix_hits, (long long)st.batches, kv.prefix_hit_rate());
  return st;
}

TEST(SchedulerStress, EveryPolicyOnConservesSequencesAndBlocks) {
  SchedulerOptions o;
  o.max_num_seqs = 24;
  o.max_num_batched_tokens = 256;
  o.priority_scheduling = true;
  o.preemption_mode = PreemptionMode::kSwap;
  o.swap_space_blocks = 40;
  o.kv_bytes_per_token = 100;
  o.long_prompt_queue = true;
  o.max_prefill_tokens_per_step = 200;
  o.max_decode_seqs_per_step = 16;
  o.enable_prefix_caching = true;
  o.compact_every_requests = 50;
  for (unsigned seed = 1; seed <= 3; ++seed) {
    const Stats st = stress(o, seed, 120);
    EXPECT_GT(st.preemptions, 0);  // the run exercised the policies
    EXPECT_GT(st.swap_outs, 0);
    EXPECT_GT(st.prefix_hits, 0);
  }
}

TEST(SchedulerStress, RecomputeAndNoChunkingConserve) {
  SchedulerOptions o;
  o.max_num_seqs = 16;
  o.max_num_batched_tokens = 2048;
  o.chunked_prefill = false;
  o.priority_scheduling = true;
  o.enable_prefix_caching = true;
  const Stats st = stress(o, 7, 150);
  EXPECT_GT(st.preemptions, 0);
  EXPECT_GT(st.prefix_hits, 0);
}

TEST(SchedulerStress, DynamicBatchingConserves) {
  SchedulerOptions o;
  o.type = SchedulerType::kDynamicBatching;
  o.max_batch_size = 8;
  o.batch_timeout_s = 0.05;
  o.max_num_batched_tokens = 1024;
  o.strategies = {BatchStrategy::kFillFifo, BatchStrategy::kSizeAware};
  EXPECT_GT(stress(o, 11, 200).batches, 10);
}

TEST(DynamicBatching, ReplicaStyleDriverWakesUpAtTheTimeout) {
  // How a Replica drives dynamic batching: kick() schedules; when the step is empty it arms
  // one timer at next_wakeup() (if finite) that calls kick() again.
  testing::ManualRuntime rt;
  kv::BlockManager kv(1000, 16, 0.0);
  SchedulerOptions o;
  o.type = SchedulerType::kDynamicBatching;
  o.max_batch_size = 8;
  o.batch_timeout_s = 0.05;
  Scheduler sch(o, &kv);
  TimerId timer = 0;
  Time timer_at = Scheduler::kNever;
  std::vector<Time> batch_starts;
  std::function<void()> kick = [&] {
    ScheduledStep st = sch.schedule(rt.now());
    if (st.empty()) {
      Time w = sch.next_wakeup();
      if (w <= rt.now()) w = Scheduler::kNever;  // not a timeout that blocks: wait for events
      if (w != timer_at) {
        if (timer) rt.cancel(timer);
        timer = 0;
        timer_at = w;
        if (w != Scheduler::kNever)
          timer = rt.at(w, [&] {
            timer = 0;
            timer_at = Scheduler::kNever;
            kick();
          });
      }
      return;
    }
    if (sch.batches_formed() > static_cast<std::int64_t>(batch_starts.size()))
      batch_starts.push_back(rt.now());
    rt.at(rt.now() + 0.01, [&, st] {
      sch.complete(st, StepResult{}, rt.now());
      kick();
    });
  };
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 3; ++i) {
    rt.at(0.001 * i, [&, i] {
      seqs.push_back(make_seq(i + 1, 10, 2, Priority::kNormal, rt.now()));
      sch.add(seqs.back().get());
      kick();
    });
  }
  rt.run_until_idle();
  ASSERT_EQ(batch_starts.size(), 1u);
  EXPECT_DOUBLE_EQ(batch_starts[0], 0.05);  // the oldest arrived at 0
  EXPECT_EQ(sch.num_running() + sch.num_waiting(), 0u);
  EXPECT_EQ(sch.finished_requests(), 3);
}

}  // namespace
}  // namespace prima::sched
