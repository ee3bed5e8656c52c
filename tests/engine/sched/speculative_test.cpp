// Speculative decoding in the scheduler (SchedulerOptions::speculative_tokens): a decoding
// sequence verifies its drafts in the step (the shape counts them), produces 1 + the accepted
// drafts, never more than its max_output_tokens; the executor's count wins over the drawn one;
// the draws depend on (seed, request, position) only; the mean tokens per step is the closed
// form (1 - a^(k+1)) / (1 - a).
#include "engine/scenario/speculative.h"

#include <gtest/gtest.h>

#include <memory>

#include "engine/sched/scheduler.h"
#include "tests/engine/sched/sched_test_util.h"

namespace prima::sched {
namespace {

using testutil::make_seq;

SchedulerOptions spec_options(int k, double a, std::uint64_t seed = 7) {
  SchedulerOptions o;
  o.max_num_batched_tokens = 4096;
  o.speculative_tokens = k;
  o.acceptance_rate = a;
  o.acceptance_seed = seed;
  return o;
}

// Runs one sequence to its end; returns the tokens each decode step produced.
std::vector<int> run(const SchedulerOptions& o, int prompt, int output, RequestId id = 1,
                     const std::vector<int>* reported = nullptr) {
  kv::BlockManager kv(4096, 16, 0.0);
  Scheduler sch(o, &kv);
  auto s = make_seq(id, prompt, output);
  sch.add(s.get());
  std::vector<int> per_step;
  for (int t = 0; t < 100000 && !s->finished() && s->finish_reason.empty(); ++t) {
    auto step = sch.schedule(t);
    if (step.empty()) break;
    const SeqWork& w = step.batch.seqs[0];
    StepResult r;
    if (reported && !w.is_prefill) r.accepted = *reported;
    const int before = s->num_generated;
    auto out = sch.complete(step, r, t + 1);
    if (!w.is_prefill) per_step.push_back(s->num_generated - before);
    if (!out.finished.empty()) break;
  }
  EXPECT_EQ(s->num_generated, output);
  return per_step;
}

TEST(Speculative, ADecodeStepVerifiesItsDraftsAndTheShapeCountsThem) {
  kv::BlockManager kv(100, 16, 0.0);
  Scheduler sch(spec_options(3, 0.5), &kv);
  auto a = make_seq(1, 20, 50);
  sch.add(a.get());
  auto p = sch.schedule(0);  // prefill: no drafts
  EXPECT_EQ(p.batch.seqs[0].draft_tokens, 0);
  sch.complete(p, StepResult{}, 1);
  auto d = sch.schedule(1);
  const SeqWork& w = d.batch.seqs[0];
  EXPECT_FALSE(w.is_prefill);
  EXPECT_TRUE(w.samples);
  EXPECT_EQ(w.draft_tokens, 3);
  EXPECT_EQ(w.num_tokens, 4);        // the next token + 3 drafts
  EXPECT_EQ(w.context_len, 20 + 4);  // prompt + the first token + 3 drafts
  EXPECT_EQ(d.batch.shape.decode_tokens, 4);
  EXPECT_EQ(d.batch.shape.sampled, 4);
  EXPECT_EQ(d.batch.shape.draft_steps, 3);
  EXPECT_EQ(d.batch.shape.draft_seqs, 1);
  EXPECT_EQ(d.batch.shape.draft_context, 21);
  StepResult r;
  r.accepted = {2};  // the executor verified: 2 drafts accepted
  const auto out = sch.complete(d, r, 2);
  ASSERT_EQ(out.produced_token.size(), 1u);
  EXPECT_EQ(a->num_generated, 1 + 3);  // 2 drafts + the token after them
  EXPECT_EQ(a->step_new_tokens, 3);
  EXPECT_EQ(a->num_computed, a->known_tokens() - 1);  // decoding again
  EXPECT_TRUE(a->decoding());
}

TEST(Speculative, NeverPastTheOutputsEnd) {
  const std::vector<int> all = {99};  // every draft accepted (capped at the step's drafts)
  const auto steps = run(spec_options(4, 1.0), 10, 12, 1, &all);
  // 11 tokens after the first: 5, 5, then 1 (the last step drafts nothing).
  EXPECT_EQ(steps, (std::vector<int>{5, 5, 1}));
}

TEST(Speculative, DrawsDependOnSeedRequestAndPositionOnly) {
  const auto a = run(spec_options(3, 0.6, 11), 16, 300, 5);
  EXPECT_EQ(a, run(spec_options(3, 0.6, 11), 16, 300, 5));  // the same
  EXPECT_NE(a, run(spec_options(3, 0.6, 12), 16, 300, 5));  // another seed
  EXPECT_NE(a, run(spec_options(3, 0.6, 11), 16, 300, 6));  // another request
}

TEST(Speculative, MeanTokensPerStepIsTheClosedForm) {
  for (const auto& [k, a] : std::vector<std::pair<int, double>>{{1, 0.5}, {3, 0.7}, {5, 0.9}}) {
    const auto steps = run(spec_options(k, a), 16, 20001);
    double sum = 0;
    for (std::size_t i = 0; i + 1 < steps.size(); ++i) sum += steps[i];  // the last may be cut
    const double mean = sum / static_cast<double>(steps.size() - 1);
    const double want = scenario::SpeculativeSpec::expected_tokens(k, a);
    EXPECT_NEAR(mean, want, 0.03 * want) << "k " << k << " a " << a;
  }
  EXPECT_DOUBLE_EQ(scenario::SpeculativeSpec::expected_tokens(3, 0.5), 1.875);
  EXPECT_DOUBLE_EQ(scenario::SpeculativeSpec::expected_tokens(4, 1.0), 5);
  EXPECT_DOUBLE_EQ(scenario::SpeculativeSpec::expected_tokens(4, 0.0), 1);
}

}  // namespace
}  // namespace prima::sched
