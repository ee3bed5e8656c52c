// Sampler: greedy edge cases, temperature 0 and top-k 1 are greedy, the same seed gives the
// same draws whatever the request id or batch, and the distribution over many draws follows
// the softmax (with top-k / top-p cuts respected).
#include "backends/real/sampler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

namespace prima::real {
namespace {

TEST(Sampler, ArgmaxTakesTheLowestIdOnTies) {
  const float l[5] = {1.f, 3.f, -2.f, 3.f, 0.f};
  EXPECT_EQ(argmax(l, 5), 1);
  const float n[3] = {-5.f, -1.f, -1.f};
  EXPECT_EQ(argmax(n, 3), 1);
}

// argmax against the plain scan (first strictly larger wins) on random logits with ties,
// NaNs, signed zeros and infinities, at lengths around the 8-wide passes.
TEST(Sampler, ArgmaxEqualsThePlainScan) {
  auto scan = [](const std::vector<float>& l) {
    int best = 0;
    for (int i = 1; i < static_cast<int>(l.size()); ++i)
      if (l[i] > l[best]) best = i;
    return best;
  };
  std::mt19937 rng(7);
  const float special[] = {NAN, 0.0f, -0.0f, INFINITY, -INFINITY, 3.0f};
  for (int trial = 0; trial < 4000; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 40);
    std::vector<float> l(static_cast<size_t>(n));
    for (float& x : l) {
      const unsigned r = rng() % 10;
      x = r < 3 ? special[rng() % 6] : static_cast<float>(static_cast<int>(rng() % 7) - 3);
    }
    ASSERT_EQ(argmax(l.data(), n), scan(l)) << "trial " << trial;
  }
}

TEST(Sampler, TemperatureZeroAndTopKOneAreGreedy) {
  std::vector<float> l = {0.1f, 2.0f, 1.9f, -1.f, 2.0f};
  std::vector<std::pair<float, int>> scratch;
  SamplingParams p;
  p.temperature = 0;
  p.seed = 5;
  for (int pos = 0; pos < 50; ++pos) EXPECT_EQ(sample_token(l.data(), 5, p, 1, pos, &scratch), 1);
  p.temperature = 1.5;
  p.top_k = 1;
  for (int pos = 0; pos < 50; ++pos) EXPECT_EQ(sample_token(l.data(), 5, p, 1, pos, &scratch), 1);
}

TEST(Sampler, SameSeedSameTokens) {
  std::vector<float> l(100);
  for (int i = 0; i < 100; ++i) l[i] = std::sin(i * 0.7f) * 2;
  std::vector<std::pair<float, int>> scratch;
  SamplingParams p;
  p.temperature = 1.0;
  p.seed = 1234;
  std::vector<int> a, b, c;
  for (int pos = 0; pos < 64; ++pos) {
    a.push_back(sample_token(l.data(), 100, p, 1, pos, &scratch));
    b.push_back(sample_token(l.data(), 100, p, 999, pos, &scratch));  // another request id
  }
  EXPECT_EQ(a, b);
  p.seed = 1235;
  for (int pos = 0; pos < 64; ++pos) c.push_back(sample_token(l.data(), 100, p, 1, pos, &scratch));
  EXPECT_NE(a, c);
  // Seed 0: the request id seeds the draws.
  p.seed = 0;
  std::vector<int> d, e;
  for (int pos = 0; pos < 64; ++pos) {
    d.push_back(sample_token(l.data(), 100, p, 1, pos, &scratch));
    e.push_back(sample_token(l.data(), 100, p, 2, pos, &scratch));
  }
  EXPECT_NE(d, e);
}

TEST(Sampler, UniformDrawsAreUniform) {
  int hist[10] = {};
  const int n = 100000;
  for (int i = 0; i < n; ++i) {
    const double u = sampling_uniform(77, 1, i);
    ASSERT_GE(u, 0.0);
    ASSERT_LT(u, 1.0);
    ++hist[static_cast<int>(u * 10)];
  }
  for (int h : hist) EXPECT_NEAR(h, n / 10, n / 100);
}

TEST(Sampler, DistributionFollowsTheSoftmax) {
  // logits log(1), log(2), log(3), log(4): probabilities 0.1, 0.2, 0.3, 0.4 at T = 1.
  std::vector<float> l = {0.f, std::log(2.f), std::log(3.f), std::log(4.f)};
  std::vector<std::pair<float, int>> scratch;
  SamplingParams p;
  p.temperature = 1.0;
  p.seed = 9;
  const int n = 40000;
  std::map<int, int> count;
  for (int pos = 0; pos < n; ++pos) ++count[sample_token(l.data(), 4, p, 1, pos, &scratch)];
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(count[i] / double(n), 0.1 * (i + 1), 0.01) << i;

  // Temperature 0.5 squares the ratios: 1, 4, 9, 16 over 30.
  p.temperature = 0.5;
  count.clear();
  for (int pos = 0; pos < n; ++pos) ++count[sample_token(l.data(), 4, p, 1, pos, &scratch)];
  for (int i = 0; i < 4; ++i)
    EXPECT_NEAR(count[i] / double(n), (i + 1) * (i + 1) / 30.0, 0.01) << i;

  // top-k 2: only ids 3 and 2, renormalised 4:3.
  p.temperature = 1.0;
  p.top_k = 2;
  count.clear();
  for (int pos = 0; pos < n; ++pos) ++count[sample_token(l.data(), 4, p, 1, pos, &scratch)];
  EXPECT_EQ(count[0] + count[1], 0);
  EXPECT_NEAR(count[3] / double(n), 4.0 / 7, 0.01);

  // top-p 0.65: 0.4 + 0.3 reaches it, so ids 3 and 2 only.
  p.top_k = 0;
  p.top_p = 0.65;
  count.clear();
  for (int pos = 0; pos < n; ++pos) ++count[sample_token(l.data(), 4, p, 1, pos, &scratch)];
  EXPECT_EQ(count[0] + count[1], 0);
  EXPECT_NEAR(count[2] / double(n), 3.0 / 7, 0.01);
}

// The sort-everything sampler the selection paths replace: candidates by descending logit
// (ascending id on ties), top-k, softmax in double, nucleus cut, inverse CDF in that order.
int reference_sample(const std::vector<float>& l, const SamplingParams& p, std::int64_t pos) {
  std::vector<std::pair<float, int>> c;
  for (int i = 0; i < static_cast<int>(l.size()); ++i) c.push_back({l[i], i});
  std::sort(c.begin(), c.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  int k = p.top_k > 0 ? std::min<int>(p.top_k, c.size()) : static_cast<int>(c.size());
  std::vector<double> prob(k);
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += prob[i] = std::exp((c[i].first - c[0].first) / p.temperature);
  if (p.top_p < 1.0) {
    double cum = 0;
    for (int i = 0; i < k; ++i)
      if ((cum += prob[i] / sum) >= p.top_p) {
        k = i + 1;
        break;
      }
    sum = 0;
    for (int i = 0; i < k; ++i) sum += prob[i];
  }
  const double u = sampling_uniform(p.seed, 1, pos) * sum;
  double cum = 0;
  for (int i = 0; i < k; ++i)
    if (u < (cum += prob[i])) return c[i].second;
  return c[k - 1].second;
}

// Top-k and top-p draw exactly the reference's tokens; a flat distribution makes the nucleus
// thousands of tokens wide, so the candidate set grows through every size up to the whole
// vocabulary.
TEST(Sampler, SelectionPathsDrawTheFullSortsTokens) {
  std::mt19937 rng(3);
  for (double sd : {0.3, 1.0, 4.0}) {
    std::normal_distribution<float> dist(0.f, static_cast<float>(sd));
    std::vector<float> l(5000);
    for (float& x : l) x = dist(rng);
    l[17] = l[4000] = 6.f;  // a tie at the top
    std::vector<std::pair<float, int>> scratch;
    for (auto [k, top_p] : {std::pair{0, 0.9}, std::pair{0, 0.5}, std::pair{0, 0.999},
                            std::pair{50, 1.0}, std::pair{50, 0.8}, std::pair{4999, 0.95}}) {
      SamplingParams p;
      p.temperature = 0.8;
      p.seed = 11;
      p.top_k = k;
      p.top_p = top_p;
      int same = 0;
      for (int pos = 0; pos < 300; ++pos)
        same += sample_token(l.data(), 5000, p, 1, pos, &scratch) == reference_sample(l, p, pos);
      EXPECT_EQ(same, 300) << "sd " << sd << " top_k " << k << " top_p " << top_p;
    }
  }
}

// Plain temperature over a large vocabulary: each token's frequency follows the softmax.
TEST(Sampler, PlainTemperatureFollowsTheSoftmaxOverALargeVocabulary) {
  std::vector<float> l(3000, -4.f);
  l[5] = 1.f;
  l[2999] = 0.f;
  l[1000] = 0.5f;
  SamplingParams p;
  p.temperature = 1.0;
  p.seed = 21;
  double z = 2997 * std::exp(-4.0) + std::exp(1.0) + 1 + std::exp(0.5);
  std::map<int, int> count;
  std::vector<std::pair<float, int>> scratch;
  const int n = 40000;
  for (int pos = 0; pos < n; ++pos) ++count[sample_token(l.data(), 3000, p, 1, pos, &scratch)];
  EXPECT_NEAR(count[5] / double(n), std::exp(1.0) / z, 0.01);
  EXPECT_NEAR(count[2999] / double(n), 1 / z, 0.01);
  EXPECT_NEAR(count[1000] / double(n), std::exp(0.5) / z, 0.01);
}

}  // namespace
}  // namespace prima::real
