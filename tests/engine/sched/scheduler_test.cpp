#include "engine/sched/scheduler.h"

#include <gtest/gtest.h>

#include <memory>
#include <vector>

namespace prima::sched {
namespace {

std::unique_ptr<Sequence> make_seq(RequestId id, int prompt, int output) {
  auto s = std::make_unique<Sequence>();
  s->req.id = id;
  s->req.prompt_tokens = prompt;
  s->req.max_output_tokens = output;
  return s;
}

// Every field of two batch shapes equal, bit for bit.
void expect_same_shape(const BatchShape& a, const BatchShape& b) {
  EXPECT_EQ(a.num_seqs, b.num_seqs);
  EXPECT_EQ(a.prefill_tokens, b.prefill_tokens);
  EXPECT_EQ(a.decode_tokens, b.decode_tokens);
  EXPECT_EQ(a.sampled, b.sampled);
  EXPECT_EQ(a.attended_pairs, b.attended_pairs);
  EXPECT_EQ(a.kv_tokens_read, b.kv_tokens_read);
  EXPECT_EQ(a.swap_out_bytes, b.swap_out_bytes);
  EXPECT_EQ(a.swap_in_bytes, b.swap_in_bytes);
}

StepResult ok_result() {
  return StepResult{};
}

TEST(Scheduler, ChunkedPrefillThenDecode) {
  kv::BlockManager kv(100, 16, 0.0);
  SchedulerOptions o;
  o.max_num_batched_tokens = 64;
  Scheduler sch(o, &kv);
  auto a = make_seq(1, 100, 3);
  sch.add(a.get());

  auto s1 = sch.schedule(0);
  ASSERT_EQ(s1.seqs.size(), 1u);
  EXPECT_EQ(s1.batch.seqs[0].num_tokens, 64);  // first chunk fills the budget
  EXPECT_TRUE(s1.batch.seqs[0].is_prefill);
  EXPECT_FALSE(s1.batch.seqs[0].samples);
  EXPECT_TRUE(sch.schedule(0).empty());  // in flight: nothing else to do
  auto out1 = sch.complete(s1, ok_result(), 1);
  EXPECT_TRUE(out1.produced_token.empty());

  auto s2 = sch.schedule(1);
  EXPECT_EQ(s2.batch.seqs[0].num_tokens, 36);
  EXPECT_TRUE(s2.batch.seqs[0].samples);
  EXPECT_EQ(s2.batch.seqs[0].context_len, 100);
  auto out2 = sch.complete(s2, ok_result(), 2);
  ASSERT_EQ(out2.produced_token.size(), 1u);
  EXPECT_EQ(a->first_token_s, 2);

  for (int i = 0; i < 2; ++i) {
    auto s = sch.schedule(3 + i);
    ASSERT_EQ(s.batch.seqs[0].num_tokens, 1);
    EXPECT_FALSE(s.batch.seqs[0].is_prefill);
    EXPECT_EQ(s.batch.seqs[0].context_len, 101 + i);
    auto out = sch.complete(s, ok_result(), 4 + i);
    EXPECT_EQ(out.finished.size(), i == 1 ? 1u : 0u);
  }
  EXPECT_EQ(a->num_generated, 3);
  EXPECT_EQ(kv.free_blocks(), 100);
  EXPECT_EQ(sch.num_running(), 0u);
}

// A request scoring its prompt keeps each chunk's prompt log-probabilities by position (entry k
// scores prompt token k + 1), and bypasses the prefix cache: every position is computed.
TEST(Scheduler, PromptLogprobsAreKeptByPositionAcrossChunks) {
  kv::BlockManager kv(100, 16, 0.0);
  SchedulerOptions o;
  o.max_num_batched_tokens = 64;
  o.enable_prefix_caching = true;
  Scheduler sch(o, &kv);
  auto warm = make_seq(1, 100, 1);
  warm->req.prompt_ids.assign(100, 7);
  sch.add(warm.get());
  for (int t = 0; t < 3; ++t) {
    auto st = sch.schedule(t);
    if (!st.empty()) sch.complete(st, ok_result(), t);
  }
  auto a = make_seq(2, 100, 1);
  a->req.prompt_ids.assign(100, 7);  // the same prompt: its prefix is cached
  a->req.sampling.prompt_logprobs = 0;
  sch.add(a.get());
  auto s1 = sch.schedule(10);
  ASSERT_EQ(s1.seqs.size(), 1u);
  EXPECT_EQ(s1.batch.seqs[0].context_len - s1.batch.seqs[0].num_tokens, 0);  // no cache hit
  StepResult r1;
  r1.prompt_logprobs.resize(1);
  for (int j = 0; j < 64; ++j) r1.prompt_logprobs[0].push_back(TokenLogprobs{-float(j), {}});
  sch.complete(s1, r1, 11);
  auto s2 = sch.schedule(12);
  ASSERT_EQ(s2.batch.seqs[0].num_tokens, 36);
  StepResult r2;
  r2.prompt_logprobs.resize(1);
  for (int j = 0; j < 35; ++j) r2.prompt_logprobs[0].push_back(TokenLogprobs{-100.f - j, {}});
  sch.complete(s2, r2, 13);
  ASSERT_EQ(a->prompt_logprobs.size(), 99u);
  EXPECT_EQ(a->prompt_logprobs[0].logprob, 0.f);
  EXPECT_EQ(a->prompt_logprobs[63].logprob, -63.f);
  EXPECT_EQ(a->prompt_logprobs[64].logprob, -100.f);
  EXPECT_EQ(a->prompt_logprobs[98].logprob, -134.f);
  // The same prompt without scoring does take the cached prefix.
  auto c = make_seq(3, 100, 1);
  c->req.prompt_ids.assign(100, 7);
  sch.add(c.get());
  auto s3 = sch.schedule(14);
  ASSERT_EQ(s3.seqs.size(), 1u);
  EXPECT_GT(s3.batch.seqs[0].context_len - s3.batch.seqs[0].num_tokens, 0);
}

// Every step carries one SeqWork per sequence, in the order of ScheduledStep::seqs, and a
// shape that is exactly their sum (the simulator times the shape, the real backend runs the
// SeqWork: one plan for both). Over a run whose decodes cross block boundaries and run out of
// blocks (small blocks, a tight cache), with sequences joining and finishing throughout, every
// running sequence's block table matches its block count and the cache's books balance.
TEST(Scheduler, StepsCarrySeqWorkMatchingTheirShapeAndBlockTables) {
  kv::BlockManager kv(40, 4, 0.0);
  SchedulerOptions o;
  o.block_size = 4;
  o.max_num_batched_tokens = 48;
  o.max_num_seqs = 12;
  Scheduler sch(o, &kv);
  std::vector<std::unique_ptr<Sequence>> seqs;
  int preempted = 0, decode_steps = 0;
  for (int t = 0; t < 400; ++t) {
    if (t % 2 == 0 && seqs.size() < 80) {  // arrivals
      const int prompt = 3 + (t * 13) % 29, output = 20 + (t * 7) % 41;
      seqs.push_back(make_seq(RequestId(t + 1), prompt, output));
      sch.add(seqs.back().get());
    }
    auto s = sch.schedule(t);
    ASSERT_EQ(s.batch.seqs.size(), s.seqs.size()) << "step " << t;
    BatchShape sum;
    for (std::size_t i = 0; i < s.seqs.size(); ++i) {
      const SeqWork& w = s.batch.seqs[i];
      ASSERT_EQ(w.seq, s.seqs[i]) << "step " << t;
      EXPECT_EQ(w.request, s.seqs[i]->req.id);
      EXPECT_EQ(w.context_len, s.seqs[i]->num_computed + w.num_tokens);
      sum.add(w);
    }
    expect_same_shape(s.batch.shape, sum);
    if (::testing::Test::HasFailure()) return;
    preempted += s.preempted;
    decode_steps += s.batch.shape.decode_tokens > 0;
    sch.complete(s, ok_result(), t + 0.5);
    int held = 0;
    for (const Sequence* r : sch.running()) {
      ASSERT_EQ(r->num_blocks, static_cast<int>(r->blocks.size())) << "step " << t;
      held += r->num_blocks;
    }
    ASSERT_EQ(held + kv.free_blocks(), kv.num_blocks()) << "step " << t;
  }
  int finished = 0;
  for (const auto& s : seqs) finished += s->num_generated == s->req.max_output_tokens;
  EXPECT_GE(finished, 30);      // sequences ran to their end throughout
  EXPECT_GT(preempted, 0);      // the cache ran out
  EXPECT_GT(decode_steps, 50);  // and decodes were many
}

// Steps in flight together (pipeline): the sequences of steps that finished, in whatever
// order, are taken again oldest-admitted first; preempted ones are skipped.
TEST(Scheduler, StepsFinishingOutOfOrderGiveBackAdmissionOrder) {
  kv::BlockManager kv(100, 16, 0.0);
  SchedulerOptions o;
  o.max_num_batched_tokens = 1024;
  o.max_seqs_per_step = 2;
  Scheduler sch(o, &kv);
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (RequestId id = 1; id <= 6; ++id) {
    seqs.push_back(make_seq(id, 8, 50));
    sch.add(seqs.back().get());
  }
  auto ids = [](const ScheduledStep& st) {
    std::vector<RequestId> v;
    for (const Sequence* s : st.seqs) v.push_back(s->req.id);
    return v;
  };
  auto a = sch.schedule(0), b = sch.schedule(0), c = sch.schedule(0);
  EXPECT_EQ(ids(a), (std::vector<RequestId>{1, 2}));
  EXPECT_EQ(ids(b), (std::vector<RequestId>{3, 4}));
  EXPECT_EQ(ids(c), (std::vector<RequestId>{5, 6}));
  EXPECT_TRUE(sch.schedule(0).empty());  // all on the devices
  sch.complete(c, ok_result(), 1);
  sch.complete(a, ok_result(), 2);
  auto d = sch.schedule(2);  // 1, 2 before 5, 6
  EXPECT_EQ(ids(d), (std::vector<RequestId>{1, 2}));
  sch.complete(b, ok_result(), 3);
  auto e = sch.schedule(3);
  EXPECT_EQ(ids(e), (std::vector<RequestId>{3, 4}));
  // Cancelled while waiting for the devices: gone from the ready ones too.
  EXPECT_TRUE(sch.remove(seqs[4].get()));
  auto f = sch.schedule(3);
  EXPECT_EQ(ids(f), (std::vector<RequestId>{6}));
}

TEST(Scheduler, DecodesGoFirstAndBudgetIsShared) {
  kv::BlockManager kv(1000, 16, 0.0);
  SchedulerOptions o;
  o.max_num_batched_tokens = 10;
  Scheduler sch(o, &kv);
  auto a = make_seq(1, 5, 10), b = make_seq(2, 50, 10);
  sch.add(a.get());
  auto s1 = sch.schedule(0);
  sch.complete(s1, ok_result(), 1);  // a decoding now
  sch.add(b.get());
  auto s2 = sch.schedule(1);
  ASSERT_EQ(s2.seqs.size(), 2u);
  EXPECT_EQ(s2.seqs[0], a.get());
  EXPECT_EQ(s2.batch.seqs[0].num_tokens, 1);
  EXPECT_EQ(s2.batch.seqs[1].num_tokens, 9);  // b gets what is left of the budget
  EXPECT_EQ(s2.batch.shape.decode_tokens, 1);
  EXPECT_EQ(s2.batch.shape.prefill_tokens, 9);
}

// mixed_batches false (SGLang's default): prefill work gets a step of its own, first; the
// decodes run when no prefill can.
TEST(Scheduler, UnmixedStepsRunPrefillsAloneThenDecodes) {
  kv::BlockManager kv(1000, 16, 0.0);
  SchedulerOptions o;
  o.max_num_batched_tokens = 10;
  o.mixed_batches = false;
  Scheduler sch(o, &kv);
  auto a = make_seq(1, 5, 10), b = make_seq(2, 15, 10);
  sch.add(a.get());
  sch.complete(sch.schedule(0), ok_result(), 1);  // a decoding now
  sch.add(b.get());
  auto s2 = sch.schedule(1);  // b's first chunk, a waits
  ASSERT_EQ(s2.seqs.size(), 1u);
  EXPECT_EQ(s2.seqs[0], b.get());
  EXPECT_EQ(s2.batch.shape.prefill_tokens, 10);
  EXPECT_EQ(s2.batch.shape.decode_tokens, 0);
  sch.complete(s2, ok_result(), 2);
  auto s3 = sch.schedule(2);  // b's last chunk: a running prefill also goes first
  ASSERT_EQ(s3.seqs.size(), 1u);
  EXPECT_EQ(s3.batch.shape.prefill_tokens, 5);
  sch.complete(s3, ok_result(), 3);
  auto s4 = sch.schedule(3);  // no prefill left: both decode
  ASSERT_EQ(s4.seqs.size(), 2u);
  EXPECT_EQ(s4.batch.shape.decode_tokens, 2);
  EXPECT_EQ(s4.batch.shape.prefill_tokens, 0);
  EXPECT_EQ(a->num_generated, 1);  // a decoded no token while b prefilled
}

// overlap_schedule (SGLang's overlap scheduler): the step that starts when one ends was formed
// when that one started, so a request arriving meanwhile waits one more step; an idle replica
// takes it at once.
TEST(Scheduler, OverlapAdmitsAnArrivalOneStepLater) {
  for (bool overlap : {false, true}) {
    kv::BlockManager kv(1000, 16, 0.0);
    SchedulerOptions o;
    o.overlap_schedule = overlap;
    Scheduler sch(o, &kv);
    auto a = make_seq(1, 5, 10), b = make_seq(2, 5, 10);
    b->req.arrival_s = 1.5;
    sch.add(a.get());  // idle: a is admitted at once either way
    auto s0 = sch.schedule(0);
    ASSERT_EQ(s0.seqs.size(), 1u);
    sch.complete(s0, ok_result(), 1);
    auto s1 = sch.schedule(1);  // a's decode, formed at 1
    sch.add(b.get());           // b arrives at 1.5, while that step runs
    sch.complete(s1, ok_result(), 2);
    auto s2 = sch.schedule(2);
    EXPECT_EQ(s2.seqs.size(), overlap ? 1u : 2u) << overlap;
    sch.complete(s2, ok_result(), 3);
    if (overlap) {
      auto s3 = sch.schedule(3);
      EXPECT_EQ(s3.seqs.size(), 2u);  // formed after b's arrival: b joins
    }
  }
}

TEST(Scheduler, MaxNumSeqsLimitsAdmission) {
  kv::BlockManager kv(1000, 16, 0.0);
  SchedulerOptions o;
  o.max_num_seqs = 2;
  Scheduler sch(o, &kv);
  std::vector<std::unique_ptr<Sequence>> seqs;
  for (int i = 0; i < 5; ++i) {
    seqs.push_back(make_seq(i + 1, 10, 5));
    sch.add(seqs.back().get());
  }
  auto s = sch.schedule(0);
  EXPECT_EQ(s.seqs.size(), 2u);
  EXPECT_EQ(sch.num_waiting(), 3u);
}

TEST(Scheduler, PreemptsNewestByRecomputeWhenBlocksRunOut) {
  // 4 blocks of 4 tokens. Two sequences of 7 prompt tokens take 2 blocks each.
  kv::BlockManager kv(4, 4, 0.0);
  SchedulerOptions o;
  Scheduler sch(o, &kv);
  auto a = make_seq(1, 7, 10), b = make_seq(2, 7, 10);
  sch.add(a.get());
  sch.add(b.get());
  auto s1 = sch.schedule(0);
  ASSERT_EQ(s1.seqs.size(), 2u);
  EXPECT_EQ(kv.free_blocks(), 0);
  sch.complete(s1, ok_result(), 1);  // both have 1 token; 8 tokens fit in 2 blocks
  auto s2 = sch.schedule(1);
  ASSERT_EQ(s2.seqs.size(), 2u);  // context 8 each: still fits
  sch.complete(s2, ok_result(), 2);
  // Now each needs a 3rd block: a (oldest) preempts b.
  auto s3 = sch.schedule(2);
  ASSERT_EQ(s3.seqs.size(), 1u);
  EXPECT_EQ(s3.seqs[0], a.get());
  EXPECT_EQ(s3.preempted, 1);
  EXPECT_EQ(b->num_computed, 0);
  EXPECT_EQ(b->preemptions, 1);
  EXPECT_EQ(b->num_generated, 2);  // generated tokens are kept and recomputed
  EXPECT_EQ(sch.waiting().front(), b.get());
  EXPECT_EQ(sch.total_preemptions(), 1);
  // b was later than a in the ready list when a preempted it: it left the list (not run
  // twice, not run while waiting). Both finish, each scheduled once per step.
  sch.complete(s3, ok_result(), 3);
  int done = 0;
  for (int t = 4; t < 60 && done < 2; ++t) {
    auto s = sch.schedule(t);
    ASSERT_FALSE(s.empty()) << t;
    if (s.seqs.size() == 2) {
      EXPECT_NE(s.seqs[0], s.seqs[1]) << t;
    }
    for (Sequence* q : s.seqs) EXPECT_TRUE(q == a.get() || q == b.get());
    done += static_cast<int>(sch.complete(s, ok_result(), t + 1).finished.size());
  }
  EXPECT_EQ(done, 2);
  EXPECT_EQ(a->num_generated, 10);
  EXPECT_EQ(b->num_generated, 10);
  EXPECT_EQ(kv.free_blocks(), 4);
}

TEST(Scheduler, FailedStepRecomputesThenFails) {
  kv::BlockManager kv(100, 16, 0.0);
  SchedulerOptions o;
  o.max_step_retries = 1;
  Scheduler sch(o, &kv);
  auto a = make_seq(1, 10, 5);
  sch.add(a.get());
  StepResult bad;
  bad.status = unavailable("gpu3 down");
  auto s1 = sch.schedule(0);
  auto out1 = sch.complete(s1, bad, 1);
  EXPECT_TRUE(out1.failed.empty());
  EXPECT_EQ(sch.num_waiting(), 1u);
  auto s2 = sch.schedule(1);
  auto out2 = sch.complete(s2, bad, 2);
  ASSERT_EQ(out2.failed.size(), 1u);
  EXPECT_NE(a->reason.find("gpu3 down"), std::string::npos);
  EXPECT_EQ(kv.free_blocks(), 100);
}

TEST(Scheduler, WithoutChunkingALongPromptWaitsForBudget) {
  kv::BlockManager kv(100, 16, 0.0);
  SchedulerOptions o;
  o.chunked_prefill = false;
  o.max_num_batched_tokens = 50;
  Scheduler sch(o, &kv);
  auto a = make_seq(1, 60, 5);
  sch.add(a.get());
  EXPECT_TRUE(sch.schedule(0).empty());
}

}  // namespace
}  // namespace prima::sched
