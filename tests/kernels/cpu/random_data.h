// Random test data for the kernel tests: normally distributed floats from a fixed seed (the
// same values on every run and machine: std::mt19937 and normal_distribution of libstdc++).
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace prima::kernels::testing {

inline std::vector<float> randn(std::int64_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = d(rng);
  return v;
}

}  // namespace prima::kernels::testing
