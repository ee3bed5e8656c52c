// Logit processing (logit_processing.h) against hand-computed references on small rows:
// logit_bias then repetition / frequency / presence penalties in vLLM's order and semantics;
// raw log-probabilities (log-softmax before any processing) of the sampled token and the top
// alternatives; sample_row is sample_token on the untouched row when nothing is asked; the
// step encoding carries the penalties, typical_p, logit_bias, logprobs and the token
// histories to the other ranks.
#include "backends/real/logit_processing.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backends/real/sampler.h"
#include "backends/real/step_codec.h"

namespace prima::real {
namespace {

// ln(e^1 + e^2 + e^3 + e^0) = ln(31.192874850...) (by hand, to 9 digits).
constexpr double kLse = 3.440189699;

TEST(LogitProcessing, LogSumExpAndTopLogprobsMatchTheHandComputedValues) {
  const std::vector<float> l = {1.f, 2.f, 3.f, 0.f};
  EXPECT_NEAR(log_sum_exp(l.data(), 4), kLse, 1e-8);
  std::vector<std::pair<float, int>> scratch;
  const auto top = top_logprobs(l.data(), 4, 3, kLse, &scratch);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].first, 2);
  EXPECT_NEAR(top[0].second, 3 - kLse, 1e-6);
  EXPECT_EQ(top[1].first, 1);
  EXPECT_NEAR(top[1].second, 2 - kLse, 1e-6);
  EXPECT_EQ(top[2].first, 0);
  EXPECT_NEAR(top[2].second, 1 - kLse, 1e-6);
  // Ties: the lower id first; n is capped at the vocabulary.
  const std::vector<float> t = {5.f, 5.f};
  const auto tt = top_logprobs(t.data(), 2, 9, log_sum_exp(t.data(), 2), &scratch);
  ASSERT_EQ(tt.size(), 2u);
  EXPECT_EQ(tt[0].first, 0);
  EXPECT_NEAR(tt[0].second, std::log(0.5), 1e-6);
}

TEST(LogitProcessing, BiasThenPenaltiesAsVllmAppliesThem) {
  std::vector<float> l = {2.f, -1.f, 0.5f, 3.f};
  SamplingParams p;
  p.repetition_penalty = 2.0;
  p.frequency_penalty = 0.5;
  p.presence_penalty = 0.25;
  p.logit_bias = {{2, 1.0f}, {99, 5.0f}};  // 99: outside the vocabulary, ignored
  const std::vector<int> prompt = {0}, output = {1, 3, 3};
  std::vector<int> scratch;
  apply_logit_processing(l.data(), 4, p, {&prompt, &output}, &scratch);
  // bias: l2 = 1.5. repetition over {0, 1, 3}: 2 / 2 = 1, -1 * 2 = -2, 3 / 2 = 1.5.
  // frequency (count) and presence over the output: l1 = -2 - 0.5 - 0.25, l3 = 1.5 - 1 - 0.25.
  EXPECT_FLOAT_EQ(l[0], 1.0f);
  EXPECT_FLOAT_EQ(l[1], -2.75f);
  EXPECT_FLOAT_EQ(l[2], 1.5f);
  EXPECT_FLOAT_EQ(l[3], 0.25f);
  // Frequency and presence look at the output only: a prompt token is not penalized.
  std::vector<float> m = {2.f, 2.f};
  SamplingParams q;
  q.presence_penalty = 1.0;
  const std::vector<int> only_prompt = {0}, none = {};
  apply_logit_processing(m.data(), 2, q, {&only_prompt, &none}, &scratch);
  EXPECT_FLOAT_EQ(m[0], 2.0f);
  // Negative penalties reward repetition.
  std::vector<float> n = {0.f, 0.f};
  q.presence_penalty = -1.0;
  const std::vector<int> out1 = {1};
  apply_logit_processing(n.data(), 2, q, {nullptr, &out1}, &scratch);
  EXPECT_FLOAT_EQ(n[1], 1.0f);
}

TEST(LogitProcessing, ReportedLogprobsAreTheRawDistributions) {
  // Greedy with a -100 bias on the argmax: the sampled token changes to id 1, and its
  // logprob and the alternatives are those of the raw row.
  std::vector<float> l = {1.f, 2.f, 3.f, 0.f};
  SamplingParams p;
  p.logit_bias = {{2, -100.f}};
  p.logprobs = 2;
  SampleScratch scratch;
  TokenLogprobs lp;
  EXPECT_EQ(sample_row(l.data(), 4, p, {}, 1, 0, &scratch, &lp), 1);
  EXPECT_NEAR(lp.logprob, 2 - kLse, 1e-6);
  ASSERT_EQ(lp.top.size(), 2u);
  EXPECT_EQ(lp.top[0].first, 2);
  EXPECT_NEAR(lp.top[0].second, 3 - kLse, 1e-6);
  // A penalized sampled token also reports its raw logprob.
  std::vector<float> r = {1.f, 2.f, 3.f, 0.f};
  SamplingParams q;
  q.repetition_penalty = 100;  // 3 / 100 < 2: id 2 loses to id 1
  q.logprobs = 0;
  const std::vector<int> out = {2};
  TokenLogprobs lq;
  EXPECT_EQ(sample_row(r.data(), 4, q, {nullptr, &out}, 1, 0, &scratch, &lq), 1);
  EXPECT_NEAR(lq.logprob, 2 - kLse, 1e-6);
  EXPECT_TRUE(lq.top.empty());
  // Greedy without processing: the sampled token is the top alternative, same logprob.
  std::vector<float> g = {1.f, 2.f, 3.f, 0.f};
  SamplingParams gp;
  gp.logprobs = 1;
  TokenLogprobs lg;
  EXPECT_EQ(sample_row(g.data(), 4, gp, {}, 1, 0, &scratch, &lg), 2);
  EXPECT_FLOAT_EQ(lg.logprob, lg.top[0].second);
  // Caps at kMaxTopLogprobs.
  std::vector<float> big(100, 0.f);
  gp.logprobs = 50;
  EXPECT_EQ(sample_row(big.data(), 100, gp, {}, 1, 0, &scratch, &lg), 0);
  EXPECT_EQ(lg.top.size(), static_cast<std::size_t>(SamplingParams::kMaxTopLogprobs));
}

// p = (0.5, 0.3, 0.2): entropy 1.029653; |surprisal - entropy| = 0.336506, 0.174320,
// 0.579785, so the typical order is ids 1, 0, 2 with cumulative mass 0.3, 0.8, 1.0. Mass 0.5
// keeps ids 1 and 0 (the first reaching it included), 0.2 keeps id 1 alone, 1.0 cuts nothing.
TEST(LogitProcessing, TypicalCutMatchesTheHandComputedSet) {
  const std::vector<float> base = {std::log(0.5f), std::log(0.3f), std::log(0.2f)};
  std::vector<std::pair<float, int>> scratch;
  std::vector<float> l = base;
  apply_typical(l.data(), 3, 1.0, 0.5, &scratch);
  EXPECT_EQ(l[0], base[0]);
  EXPECT_EQ(l[1], base[1]);
  EXPECT_EQ(l[2], -INFINITY);
  l = base;
  apply_typical(l.data(), 3, 1.0, 0.2, &scratch);
  EXPECT_EQ(l[0], -INFINITY);
  EXPECT_EQ(l[1], base[1]);
  EXPECT_EQ(l[2], -INFINITY);
  l = base;
  apply_typical(l.data(), 3, 1.0, 1.0, &scratch);
  EXPECT_EQ(l, base);
  // Through sample_row: every draw is id 1, and the reported logprob is still the raw one.
  SamplingParams p;
  p.temperature = 1.0;
  p.typical_p = 0.2;
  p.logprobs = 0;
  SampleScratch ss;
  for (int pos = 0; pos < 50; ++pos) {
    l = base;
    TokenLogprobs lp;
    ASSERT_EQ(sample_row(l.data(), 3, p, {}, 1, pos, &ss, &lp), 1);
    EXPECT_NEAR(lp.logprob, std::log(0.3), 1e-6);
  }
}

TEST(LogitProcessing, NothingAskedIsSampleTokenOnTheUntouchedRow) {
  std::mt19937 rng(3);
  std::normal_distribution<float> d(0.f, 2.f);
  SampleScratch scratch;
  std::vector<std::pair<float, int>> s2;
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<float> l(64);
    for (float& x : l) x = d(rng);
    const std::vector<float> before = l;
    SamplingParams p;
    p.temperature = trial % 2 ? 0.8 : 0;
    p.top_p = 0.9;
    p.seed = 11;
    const int a = sample_row(l.data(), 64, p, {}, 5, trial, &scratch, nullptr);
    EXPECT_EQ(a, sample_token(before.data(), 64, p, 5, trial, &s2));
    EXPECT_EQ(l, before);
  }
}

TEST(LogitProcessing, MinPCutsBelowItsShareOfTheMostLikely) {
  // At temperature 1, p_i / p_max = exp(l_i - l_max): with min_p 0.2 the cut is
  // l_max + ln 0.2 = 3 - 1.609 = 1.391.
  std::vector<float> l = {3.0f, 1.5f, 1.3f, -2.0f};
  apply_min_p(l.data(), 4, 1.0, 0.2);
  EXPECT_EQ(l[0], 3.0f);
  EXPECT_EQ(l[1], 1.5f);
  EXPECT_TRUE(std::isinf(l[2]) && l[2] < 0);
  EXPECT_TRUE(std::isinf(l[3]) && l[3] < 0);
  // At temperature 2 the cut is twice as far below: 3 - 3.219 = -0.219.
  std::vector<float> t = {3.0f, 1.5f, 1.3f, -2.0f};
  apply_min_p(t.data(), 4, 2.0, 0.2);
  EXPECT_EQ(t[2], 1.3f);
  EXPECT_TRUE(std::isinf(t[3]));
  // Greedy and min_p 0 change nothing.
  std::vector<float> g = {3.0f, -9.0f};
  apply_min_p(g.data(), 2, 0.0, 0.9);
  apply_min_p(g.data(), 2, 1.0, 0.0);
  EXPECT_EQ(g, (std::vector<float>{3.0f, -9.0f}));
}

TEST(LogitProcessing, StepEncodingCarriesPenaltiesBiasLogprobsAndHistories) {
  StepInput s;
  SeqInput q;
  q.request = 3;
  q.samples = true;
  q.tokens = {1, 2};
  q.sampling.presence_penalty = 0.5;
  q.sampling.frequency_penalty = -1;
  q.sampling.repetition_penalty = 1.3;
  q.sampling.typical_p = 0.7;
  q.sampling.logit_bias = {{7, -100.f}, {9, 2.5f}};
  q.sampling.logprobs = 4;
  q.sampling.prompt_logprobs = 2;
  q.sampling.min_p = 0.25;
  q.prompt_history = {1, 2};
  q.output_history = {5};
  q.score_ids = {2};
  s.seqs.push_back(q);
  auto back = decode_step(encode_step(s));
  ASSERT_TRUE(back.ok()) << back.status().message();
  const SeqInput& r = back->seqs.at(0);
  EXPECT_DOUBLE_EQ(r.sampling.presence_penalty, 0.5);
  EXPECT_DOUBLE_EQ(r.sampling.frequency_penalty, -1);
  EXPECT_DOUBLE_EQ(r.sampling.repetition_penalty, 1.3);
  EXPECT_DOUBLE_EQ(r.sampling.typical_p, 0.7);
  EXPECT_EQ(r.sampling.logit_bias, q.sampling.logit_bias);
  EXPECT_EQ(r.sampling.logprobs, 4);
  EXPECT_EQ(r.prompt_history, q.prompt_history);
  EXPECT_EQ(r.output_history, q.output_history);
  EXPECT_EQ(r.sampling.prompt_logprobs, 2);
  EXPECT_DOUBLE_EQ(r.sampling.min_p, 0.25);
  EXPECT_EQ(r.score_ids, q.score_ids);
  EXPECT_TRUE(back->wants_logprobs());
  EXPECT_TRUE(back->wants_prompt_logprobs());
  // Logit rows: the scored position (row 0), then the sampled one (row 1).
  EXPECT_EQ(back->logit_rows(), (std::vector<std::int64_t>{0, 1}));
  // A bias count that runs past the end is an error, not a huge allocation.
  auto bytes = encode_step(s);
  bytes.resize(bytes.size() - 40);
  EXPECT_FALSE(decode_step(bytes).ok());
}

}  // namespace
}  // namespace prima::real
