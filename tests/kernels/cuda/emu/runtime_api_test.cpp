// The CPU execution layer's runtime API: one emulated device that says so, memory and copies,
// streams in order, graphs captured from a stream and replayed, events.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kernels/cuda/emu/emulator.h"
#include "kernels/cuda/launch.h"
#include "tests/kernels/cuda/emu/emu_test_support.h"

namespace prima::cudaemu {
namespace {

using testing::Buffer;

__global__ void add_one(int* x, int n) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] += 1;
}

__global__ void scale(int* x, int n, int by) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i < n) x[i] *= by;
}

TEST(EmuRuntime, OneDeviceThatSaysItIsEmulated) {
  int n = 0;
  ASSERT_EQ(cudaGetDeviceCount(&n), cudaSuccess);
  EXPECT_EQ(n, 1);
  cudaDeviceProp p{};
  ASSERT_EQ(cudaGetDeviceProperties(&p, 0), cudaSuccess);
  EXPECT_NE(std::string(p.name).find("prima CUDA emulator (CPU"), std::string::npos) << p.name;
  EXPECT_EQ(p.warpSize, 32);
  EXPECT_GT(p.totalGlobalMem, 0u);
  EXPECT_EQ(cudaGetDeviceProperties(&p, 1), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaSetDevice(3), cudaErrorInvalidDevice);
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidDevice);
}

TEST(EmuRuntime, MemoryCopiesAndSets) {
  Buffer<int> a(std::vector<int>{1, 2, 3, 4}), b(4);
  ASSERT_EQ(cudaMemcpy(b.ptr(), a.ptr(), 4 * sizeof(int), cudaMemcpyDeviceToDevice), cudaSuccess);
  EXPECT_EQ(b.read(), (std::vector<int>{1, 2, 3, 4}));
  ASSERT_EQ(cudaMemset(b.ptr(), 0, 2 * sizeof(int)), cudaSuccess);
  EXPECT_EQ(b.read(), (std::vector<int>{0, 0, 3, 4}));
  std::size_t free_b = 0, total = 0;
  ASSERT_EQ(cudaMemGetInfo(&free_b, &total), cudaSuccess);
  EXPECT_LE(free_b, total);
  int stack_value = 0;
  EXPECT_EQ(cudaFree(&stack_value), cudaErrorInvalidValue);  // not a device allocation
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidValue);
}

TEST(EmuRuntime, CapturedGraphReplaysItsWorkInOrder) {
  const int n = 1000;
  Buffer<int> x(std::vector<int>(n, 1));
  std::vector<int> host(n, 5);
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreate(&s), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal), cudaSuccess);
  PRIMA_LAUNCH(add_one, (n + 127) / 128, 128, 0, s, x.ptr(), n);
  PRIMA_LAUNCH(scale, (n + 127) / 128, 128, 0, s, x.ptr(), n, 3);
  ASSERT_EQ(cudaMemcpyAsync(host.data(), x.ptr(), n * sizeof(int), cudaMemcpyDeviceToHost, s),
            cudaSuccess);
  EXPECT_EQ(x.read()[0], 1);  // recorded, not run
  cudaGraph_t g = nullptr;
  ASSERT_EQ(cudaStreamEndCapture(s, &g), cudaSuccess);
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaGraphInstantiate(&exec, g, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
  EXPECT_EQ(host[n - 1], 6);  // (1 + 1) * 3
  ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
  EXPECT_EQ(host[0], 21);  // (6 + 1) * 3
  EXPECT_EQ(cudaStreamBeginCapture(nullptr, cudaStreamCaptureModeGlobal),
            cudaErrorStreamCaptureUnsupported);
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
}

TEST(EmuRuntime, EventsMeasureElapsedTime) {
  cudaEvent_t a = nullptr, b = nullptr;
  ASSERT_EQ(cudaEventCreate(&a), cudaSuccess);
  ASSERT_EQ(cudaEventCreate(&b), cudaSuccess);
  float ms = -1;
  EXPECT_EQ(cudaEventElapsedTime(&ms, a, b), cudaErrorInvalidResourceHandle);  // not recorded
  Buffer<int> x(std::vector<int>(4096, 0));
  ASSERT_EQ(cudaEventRecord(a, nullptr), cudaSuccess);
  PRIMA_LAUNCH(add_one, 32, 128, 0, nullptr, x.ptr(), 4096);
  ASSERT_EQ(cudaEventRecord(b, nullptr), cudaSuccess);
  ASSERT_EQ(cudaEventElapsedTime(&ms, a, b), cudaSuccess);
  EXPECT_GE(ms, 0.0f);
  cudaEventDestroy(a);
  cudaEventDestroy(b);
}

}  // namespace
}  // namespace prima::cudaemu
