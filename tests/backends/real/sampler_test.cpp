// Sampler: greedy edge cases, temperature 0 and top-k 1 are greedy, the same seed gives the
// same draws whatever the request id or batch, and the distribution over many draws follows
// the softmax (with top-k / top-p cuts respected).
#include "backends/real/sampler.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace prima::real
