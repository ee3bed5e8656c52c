// kernels/cuda/ops_math.h on the host, held bit for bit to kernels/cpu/ops.h's RMSNorm, RoPE
// and SwiGLU (and llama.cpp's vector exponential) on seeded random data. The device kernels
// use the same functions (tests/gpu checks them within float-reduction tolerances).
#include "kernels/cuda/ops_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cpu/ops_kernels.h"
#include "tests/kernels/cpu/random_data.h"

namespace prima::cuda {
namespace {

using kernels::testing::randn;

TEST(CudaOpsMath, RmsNormMatchesCpu) {
  for (std::int64_t n : {7, 576, 1536}) {
    const auto x = randn(n, 21, 3.0f), w = randn(n, 22);
    std::vector<float> cpu(std::size_t(n), 0.0f);
    kernels::rms_norm(x.data(), w.data(), n, 1e-5f, cpu.data());
    double sum = 0.0;
    for (float v : x) sum += double(v * v);
    const float scale = rms_scale(sum, n, 1e-5f);
    for (std::int64_t i = 0; i < n; ++i)
      ASSERT_EQ(float_bits(rms_apply(x[i], scale, w[i])), float_bits(cpu[i])) << n << " " << i;
  }
}

TEST(CudaOpsMath, RopeMatchesCpu) {
  const int heads = 3, head_dim = 64;
  for (std::int64_t pos : {0, 1, 17, 4000}) {
    for (int rot : {64, 32}) {
      auto cpu = randn(heads * head_dim, 31 + std::uint32_t(pos));
      auto mine = cpu;
      kernels::rope(cpu.data(), heads, head_dim, rot, pos, 100000.0f);
      const float ts = rope_theta_scale(100000.0f, rot);
      for (int h = 0; h < heads; ++h)
        for (int p = 0; p < rot / 2; ++p) {
          const float theta = rope_theta(pos, p, ts);
          float* v = mine.data() + h * head_dim + 2 * p;
          rope_rotate_pair(v, v + 1, std::cos(theta), std::sin(theta));
        }
      for (std::size_t i = 0; i < cpu.size(); ++i)
        ASSERT_EQ(float_bits(mine[i]), float_bits(cpu[i])) << "pos " << pos << " rot " << rot;
    }
  }
}

TEST(CudaOpsMath, VexpMatchesCpu) {
  for (float x = -120.0f; x < 120.0f; x += 0.37f)
    ASSERT_EQ(float_bits(vexp(x)), float_bits(kernels::detail::vexp(x))) << x;
  EXPECT_EQ(vexp(-200.0f), 0.0f);
  EXPECT_TRUE(std::isinf(vexp(200.0f)));
}

TEST(CudaOpsMath, SwigluMatchesCpu) {
  const std::int64_t n = 1536;  // a multiple of 16: the CPU uses vexp throughout
  const auto g = randn(n, 41, 4.0f), u = randn(n, 42);
  std::vector<float> cpu(static_cast<std::size_t>(n));
  kernels::silu_mul(g.data(), u.data(), n, cpu.data());
  for (std::int64_t i = 0; i < n; ++i)
    ASSERT_EQ(float_bits(swiglu(g[i], u[i])), float_bits(cpu[i])) << i;
}

}  // namespace
}  // namespace prima::cuda
