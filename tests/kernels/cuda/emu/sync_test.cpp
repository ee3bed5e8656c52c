// The CPU execution layer runs CUDA's synchronisation as CUDA defines it: block barriers,
// every shuffle kind at every width, ballots and votes, concurrent half-warp groups, dynamic
// shared memory, atomics across blocks on several workers, and a shared-memory RMSNorm of 64
// rows x 4,096 held to the CPU kernel.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/ops.h"
#include "kernels/cuda/launch.h"
#include "tests/kernels/cpu/random_data.h"
#include "tests/kernels/cuda/emu/emu_test_support.h"

namespace prima::cudaemu {
namespace {

using testing::Buffer;

// out[b] = sum of in[b*256 .. b*256+255] by a shared-memory tree with a barrier per level.
__global__ void block_sum(const int* in, int* out) {
  __shared__ int s[256];
  s[threadIdx.x] = in[blockIdx.x * 256 + threadIdx.x];
  __syncthreads();
  for (int half = 128; half > 0; half /= 2) {
    if (int(threadIdx.x) < half) s[threadIdx.x] += s[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

TEST(EmuSync, BarrierTreeSumsEveryBlockOnItsOwnSharedMemory) {
  const int blocks = 37;
  std::vector<int> in(blocks * 256);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = int(i % 1000) - 300;
  Buffer<int> din(in), dout(blocks);
  PRIMA_LAUNCH(block_sum, blocks, 256, 0, nullptr, din.ptr(), dout.ptr());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto out = dout.read();
  for (int b = 0; b < blocks; ++b) {
    long want = 0;
    for (int i = 0; i < 256; ++i) want += in[b * 256 + i];
    EXPECT_EQ(out[b], want) << "block " << b;
  }
}

// Every lane's result of each shuffle kind with parameter p at width w (warps of 64 threads).
__global__ void shuffles(int p, int w, int* idx, int* up, int* down, int* bfly) {
  const int v = 1000 + int(threadIdx.x);
  idx[threadIdx.x] = __shfl_sync(0xffffffffu, v, p, w);
  up[threadIdx.x] = __shfl_up_sync(0xffffffffu, v, unsigned(p), w);
  down[threadIdx.x] = __shfl_down_sync(0xffffffffu, v, unsigned(p), w);
  bfly[threadIdx.x] = __shfl_xor_sync(0xffffffffu, v, p, w);
}

TEST(EmuSync, ShufflesFollowCudasWidthRules) {
  for (int w : {32, 16, 8, 4, 2, 1})
    for (int p : {0, 1, 3, 5, 31}) {
      Buffer<int> a(64), b(64), c(64), d(64);
      PRIMA_LAUNCH(shuffles, 1, 64, 0, nullptr, p, w, a.ptr(), b.ptr(), c.ptr(), d.ptr());
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      const auto idx = a.read(), up = b.read(), down = c.read(), bfly = d.read();
      for (int t = 0; t < 64; ++t) {
        const int lane = t % 32, warp0 = t - lane, seg = lane / w * w, in_seg = lane % w;
        const int src_idx = seg + p % w;
        const int src_up = in_seg >= p ? lane - p : lane;
        const int src_down = in_seg + p < w ? lane + p : lane;
        const int src_xor = (lane ^ p) > seg + w - 1 ? lane : (lane ^ p);
        SCOPED_TRACE("width " + std::to_string(w) + " param " + std::to_string(p) + " thread " +
                     std::to_string(t));
        EXPECT_EQ(idx[t], 1000 + warp0 + src_idx);
        EXPECT_EQ(up[t], 1000 + warp0 + src_up);
        EXPECT_EQ(down[t], 1000 + warp0 + src_down);
        EXPECT_EQ(bfly[t], 1000 + warp0 + src_xor);
      }
    }
}

__global__ void votes(unsigned* ballot, int* any, int* all, int* count) {
  const int lane = int(threadIdx.x) % 32;
  const int pred = lane % 3 == 0;
  ballot[threadIdx.x] = __ballot_sync(0xffffffffu, pred);
  any[threadIdx.x] = __any_sync(0xffffffffu, lane == 7);
  all[threadIdx.x] = __all_sync(0xffffffffu, lane < 31);
  count[threadIdx.x] = __syncthreads_count(int(threadIdx.x) % 5 == 0);
}

TEST(EmuSync, BallotsVotesAndCountingBarrier) {
  Buffer<unsigned> b(96);
  Buffer<int> any(96), all(96), count(96);
  PRIMA_LAUNCH(votes, 1, 96, 0, nullptr, b.ptr(), any.ptr(), all.ptr(), count.ptr());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  unsigned want = 0;
  for (int l = 0; l < 32; l += 3) want |= 1u << l;
  for (int t = 0; t < 96; ++t) {
    EXPECT_EQ(b.read()[t], want);
    EXPECT_EQ(any.read()[t], 1);
    EXPECT_EQ(all.read()[t], 0);
    EXPECT_EQ(count.read()[t], 20);  // 0, 5, ..., 95
  }
}

// Each half of a warp reduces its own 16 values with a half mask, in divergent branches, then
// lane 0 and lane 16 combine them through a full-warp shuffle: the two-level warp reduction.
__global__ void two_level(const float* in, float* out) {
  const int lane = int(threadIdx.x) % 32;
  float v = in[blockIdx.x * blockDim.x + threadIdx.x];
  if (lane < 16) {
    for (int off = 8; off > 0; off /= 2) v += __shfl_down_sync(0x0000ffffu, v, unsigned(off), 16);
  } else {
    for (int off = 8; off > 0; off /= 2) v += __shfl_down_sync(0xffff0000u, v, unsigned(off), 16);
  }
  const float other = __shfl_sync(0xffffffffu, v, 16);
  if (lane == 0) out[blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32] = v + other;
}

TEST(EmuSync, DivergentHalfWarpReductionsMeetInAFullWarpShuffle) {
  const auto in = kernels::testing::randn(8 * 128, 7);
  Buffer<float> din(in), dout(8 * 4);
  PRIMA_LAUNCH(two_level, 8, 128, 0, nullptr, din.ptr(), dout.ptr());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto out = dout.read();
  for (int w = 0; w < 32; ++w) {
    double want = 0;
    for (int i = 0; i < 32; ++i) want += in[w * 32 + i];
    EXPECT_NEAR(out[w], want, 1e-4) << "warp " << w;
  }
}

__global__ void reverse_through_dynamic_shared(const double* in, double* out, int n) {
  PRIMA_DYNAMIC_SHARED(double, s);
  for (int i = int(threadIdx.x); i < n; i += int(blockDim.x)) s[i] = in[blockIdx.x * n + i];
  __syncthreads();
  for (int i = int(threadIdx.x); i < n; i += int(blockDim.x))
    out[blockIdx.x * n + i] = s[n - 1 - i];
}

TEST(EmuSync, DynamicSharedMemoryIsPerBlockAndSizedByTheLaunch) {
  const int n = 5000, blocks = 6;
  std::vector<double> in(n * blocks);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = double(i) * 0.5;
  Buffer<double> din(in), dout(in.size());
  PRIMA_LAUNCH(reverse_through_dynamic_shared, blocks, 96, n * sizeof(double), nullptr, din.ptr(),
               dout.ptr(), n);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto out = dout.read();
  for (int b = 0; b < blocks; ++b)
    for (int i = 0; i < n; ++i) ASSERT_EQ(out[b * n + i], in[b * n + n - 1 - i]);
}

__global__ void histogram(const int* in, int n, unsigned* bins, float* total, int* max) {
  for (int i = int(blockIdx.x * blockDim.x + threadIdx.x); i < n;
       i += int(gridDim.x * blockDim.x)) {
    atomicAdd(&bins[in[i] % 16], 1u);
    atomicAdd(total, 1.0f);
    atomicMax(max, in[i]);
  }
}

TEST(EmuSync, AtomicsAreExactAcrossBlocksOnSeveralWorkers) {
  const int n = 200000;
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[i] = (i * 7919) % 100003;
  Buffer<int> din(in), dmax(std::vector<int>{-1});
  Buffer<unsigned> bins(std::vector<unsigned>(16, 0));
  Buffer<float> total(std::vector<float>{0});
  PRIMA_LAUNCH(histogram, 64, 128, 0, nullptr, din.ptr(), n, bins.ptr(), total.ptr(), dmax.ptr());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<unsigned> want(16, 0);
  for (int v : in) ++want[v % 16];
  EXPECT_EQ(bins.read(), want);
  EXPECT_EQ(total.read()[0], float(n));
  EXPECT_EQ(dmax.read()[0], 100002);
}

// RMSNorm with shared memory, a warp-shuffle reduction and a barrier between the levels.
__global__ void rms_norm_rows(const float* x, const float* w, int n, float eps, float* out) {
  __shared__ float warp_sums[32];
  const float* xr = x + std::int64_t(blockIdx.x) * n;
  float s = 0.0f;
  for (int i = int(threadIdx.x); i < n; i += int(blockDim.x)) s += xr[i] * xr[i];
  for (int off = 16; off > 0; off /= 2) s += __shfl_xor_sync(0xffffffffu, s, off);
  if (threadIdx.x % 32 == 0) warp_sums[threadIdx.x / 32] = s;
  __syncthreads();
  if (threadIdx.x < 32) {
    float t = threadIdx.x < blockDim.x / 32 ? warp_sums[threadIdx.x] : 0.0f;
    for (int off = 16; off > 0; off /= 2) t += __shfl_xor_sync(0xffffffffu, t, off);
    if (threadIdx.x == 0) warp_sums[0] = t;
  }
  __syncthreads();
  const float scale = rsqrtf(warp_sums[0] / float(n) + eps);
  for (int i = int(threadIdx.x); i < n; i += int(blockDim.x))
    out[std::int64_t(blockIdx.x) * n + i] = xr[i] * scale * w[i];
}

TEST(EmuSync, RmsNormOf64RowsOf4096MatchesTheCpuKernel) {
  const int rows = 64, n = 4096;
  const auto x = kernels::testing::randn(rows * n, 11, 2.0f), w = kernels::testing::randn(n, 12);
  Buffer<float> dx(x), dw(w), dy(x.size());
  PRIMA_LAUNCH(rms_norm_rows, rows, 256, 0, nullptr, dx.ptr(), dw.ptr(), n, 1e-5f, dy.ptr());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const auto got = dy.read();
  std::vector<float> want(x.size());
  for (int r = 0; r < rows; ++r) kernels::rms_norm(&x[r * n], w.data(), n, 1e-5f, &want[r * n]);
  for (std::size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], 1e-5 * std::fabs(want[i]) + 1e-6) << "element " << i;
}

}  // namespace
}  // namespace prima::cudaemu
