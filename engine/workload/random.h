// Portable random draws for workloads.
//
// std:: distributions are implementation-defined (libstdc++ and libc++ give different
// numbers), so every draw here is written out: uniform from the top 53 bits, exponential by
// inversion, normal by Box-Muller, gamma by Marsaglia-Tsang, lognormal, weighted choice.
// Generators: std::mt19937_64 (its output is fixed by the standard) for long streams, and
// SplitMix64 (8 bytes of state) for per-user streams. derive_seed() gives independent seeds
// per stream from one scenario seed. Draws use only +,-,*,/, sqrt, log, exp, cos and pow:
// the draws are bit-identical wherever the libm gives the same results for those.
//
// Plain functions on generators owned by the caller; no shared state, not thread-safe per
// generator.
#pragma once

#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>
#include <vector>

namespace prima::workload {

// Streams derived from the scenario seed.
enum class Stream : std::uint64_t {
  kArrival = 1,
  kPromptLen = 2,
  kOutputLen = 3,
  kPriority = 4,
  kPrefix = 5,
  kUser = 6,  // closed-loop users: combined with the user index
};

inline std::uint64_t splitmix64_mix(std::uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline std::uint64_t derive_seed(std::uint64_t seed, Stream s, std::uint64_t index = 0) {
  std::uint64_t z = splitmix64_mix(seed + 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(s));
  return splitmix64_mix(z + 0x9e3779b97f4a7c15ULL * (index + 1));
}

// A tiny generator for per-user streams (Steele, Lea, Flood 2014).
class SplitMix64 {
 public:
  using result_type = std::uint64_t;
  explicit SplitMix64(std::uint64_t seed = 0) : state_(seed) {}
  std::uint64_t operator()() {
    state_ += 0x9e3779b97f4a7c15ULL;
    return splitmix64_mix(state_);
  }

 private:
  std::uint64_t state_;
};

using Rng = std::mt19937_64;

// Uniform in [0, 1) with 53 random bits.
template <typename G>
double uniform01(G& g) {
  return static_cast<double>(g() >> 11) * 0x1.0p-53;
}

// Uniform in (0, 1]: safe for log().
template <typename G>
double uniform_open0(G& g) {
  return 1.0 - uniform01(g);
}

// Integer uniform in [lo, hi] (inclusive). Multiply-shift; bias < 2^-53 for small ranges.
template <typename G>
std::int64_t uniform_int(G& g, std::int64_t lo, std::int64_t hi) {
  if (hi <= lo) return lo;
  double span = static_cast<double>(hi - lo) + 1.0;
  auto k = static_cast<std::int64_t>(uniform01(g) * span);
  return lo + (k > hi - lo ? hi - lo : k);
}

// Exponential with the given rate (mean 1/rate).
template <typename G>
double exponential(G& g, double rate) {
  return -std::log(uniform_open0(g)) / rate;
}

// Standard normal (Box-Muller; one of the pair is used, so one draw = two uniforms).
template <typename G>
double standard_normal(G& g) {
  double u1 = uniform_open0(g);
  double u2 = uniform01(g);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

// Gamma(shape k, scale 1) by Marsaglia-Tsang; k < 1 boosted via Gamma(k+1) * U^(1/k).
template <typename G>
double standard_gamma(G& g, double k) {
  if (k < 1.0) {
    double x = standard_gamma(g, k + 1.0);
    return x * std::pow(uniform_open0(g), 1.0 / k);
  }
  const double d = k - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = standard_normal(g);
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    double u = uniform_open0(g);
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (std::log(u) < 0.5 * x * x + d * (1.0 - v + std::log(v))) return d * v;
  }
}

// Lognormal: exp(mu + sigma * N(0, 1)).
template <typename G>
double lognormal(G& g, double mu, double sigma) {
  return std::exp(mu + sigma * standard_normal(g));
}

// Cumulative weights for weighted_choice (normalised to end at 1).
std::vector<double> cumulative(const std::vector<double>& weights);

// Index i with probability weights[i] (cdf from cumulative()). Skips zero-weight entries.
template <typename G>
std::size_t weighted_choice(G& g, const std::vector<double>& cdf) {
  double u = uniform01(g);
  std::size_t lo = 0, hi = cdf.size() - 1;
  while (lo < hi) {  // first index with cdf > u
    std::size_t mid = (lo + hi) / 2;
    if (cdf[mid] > u)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

}  // namespace prima::workload
