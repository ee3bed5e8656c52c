// Waits that can never complete are reported, not hung on: the report names the kernel, the
// block, each group of waiting threads with what it waits for and where, and the threads that
// returned; the fault is sticky until cudaDeviceReset, as a device fault is; with
// PRIMA_CUDA_EMU_ABORT=1 the process aborts. Each kernel here breaks a rule on purpose.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "kernels/cuda/emu/emulator.h"
#include "kernels/cuda/launch.h"
#include "tests/kernels/cuda/emu/emu_test_support.h"

namespace prima::cudaemu {
namespace {

using testing::Buffer;

constexpr int kShuffleLine = __LINE__ + 5;
// Half of each warp returns before a full-mask shuffle: the other half waits for lanes that
// will never come.
__global__ void half_warp_shuffle(float* out) {
  if (threadIdx.x % 32 >= 16) return;
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, 1.0f, 1);
}

constexpr int kBarrierA = __LINE__ + 5, kBarrierB = __LINE__ + 7;
// Threads below 128 and the others reach two different __syncthreads.
__global__ void divergent_barrier(int* out) {
  __shared__ int s[256];
  if (threadIdx.x < 128) {
    __syncthreads();
  } else {
    __syncthreads();
  }
  s[threadIdx.x] = 1;
  out[threadIdx.x] = s[threadIdx.x];
}

__global__ void barrier_after_return(int* out) {
  if (threadIdx.x >= 48) return;
  __syncthreads();
  out[threadIdx.x] = 1;
}

__global__ void not_in_own_mask(int* out) {
  out[threadIdx.x] = __shfl_sync(0x0000ffffu, int(threadIdx.x), 0);
}

__global__ void reads_outside_mask(int* out) {
  out[threadIdx.x] = __shfl_down_sync(0x0000ffffu, int(threadIdx.x), 8);  // lanes 0-15 only
}

class EmuFault : public ::testing::Test {
 protected:
  void TearDown() override { cudaDeviceReset(); }
};

TEST_F(EmuFault, HalfWarpAtAFullMaskShuffleIsADeadlockNamingThreadsAndLine) {
  Buffer<float> out(64);
  PRIMA_LAUNCH(half_warp_shuffle, 2, 64, 0, nullptr, out.ptr());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  const std::string r = last_fault();
  EXPECT_NE(r.find("kernel half_warp_shuffle, block (0,0,0) of grid (2,1,1), (64,1,1) threads"),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("deadlock"), std::string::npos) << r;
  EXPECT_NE(r.find("threads 0-15, 32-47 wait at __shfl_down_sync (mask 0xffffffff) at "
                   "tests/kernels/cuda/emu/fault_test.cpp:" +
                   std::to_string(kShuffleLine)),
            std::string::npos)
      << r;
  EXPECT_NE(r.find("threads 16-31, 48-63 have returned"), std::string::npos) << r;
}

TEST_F(EmuFault, FaultIsStickyUntilReset) {
  Buffer<float> out(64);
  PRIMA_LAUNCH(half_warp_shuffle, 1, 64, 0, nullptr, out.ptr());
  EXPECT_EQ(cudaGetLastError(), cudaErrorLaunchFailure);
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, 16), cudaErrorLaunchFailure);
  EXPECT_EQ(cudaStreamSynchronize(nullptr), cudaErrorLaunchFailure);
  cudaDeviceReset();
  EXPECT_EQ(cudaMalloc(&p, 16), cudaSuccess);
  EXPECT_EQ(cudaFree(p), cudaSuccess);
  EXPECT_EQ(last_fault(), "");
}

TEST_F(EmuFault, BarrierInDivergentCodeNamesBothPlaces) {
  Buffer<int> out(256);
  PRIMA_LAUNCH(divergent_barrier, 1, 256, 0, nullptr, out.ptr());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  const std::string r = last_fault();
  EXPECT_NE(r.find("__syncthreads reached at different places"), std::string::npos) << r;
  EXPECT_NE(r.find("threads 0-127 wait at __syncthreads at tests/kernels/cuda/emu/fault_test.cpp:" +
                   std::to_string(kBarrierA)),
            std::string::npos)
      << r;
  EXPECT_NE(
      r.find("threads 128-255 wait at __syncthreads at tests/kernels/cuda/emu/fault_test.cpp:" +
             std::to_string(kBarrierB)),
      std::string::npos)
      << r;
}

TEST_F(EmuFault, BarrierAfterSomeThreadsReturnedNeverCompletes) {
  Buffer<int> out(64);
  PRIMA_LAUNCH(barrier_after_return, 1, 64, 0, nullptr, out.ptr());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  const std::string r = last_fault();
  EXPECT_NE(r.find("threads 0-47 wait at __syncthreads"), std::string::npos) << r;
  EXPECT_NE(r.find("threads 48-63 have returned"), std::string::npos) << r;
}

TEST_F(EmuFault, LaneOutsideItsOwnMaskIsAFault) {
  Buffer<int> out(32);
  PRIMA_LAUNCH(not_in_own_mask, 1, 32, 0, nullptr, out.ptr());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  EXPECT_NE(last_fault().find("which the mask does not name"), std::string::npos) << last_fault();
}

TEST_F(EmuFault, ShuffleReadingALaneOutsideTheMaskIsAFault) {
  Buffer<int> out(16);
  PRIMA_LAUNCH(reads_outside_mask, 1, 16, 0, nullptr, out.ptr());
  EXPECT_EQ(cudaDeviceSynchronize(), cudaErrorLaunchFailure);
  EXPECT_NE(last_fault().find("thread 8 reads lane 16"), std::string::npos) << last_fault();
}

TEST_F(EmuFault, BadLaunchConfigurationIsALaunchErrorNotAFault) {
  Buffer<int> out(16);
  PRIMA_LAUNCH(reads_outside_mask, 1, 2048, 0, nullptr, out.ptr());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
  EXPECT_EQ(cudaGetLastError(), cudaSuccess);  // not sticky
  PRIMA_LAUNCH(reads_outside_mask, 0, 32, 0, nullptr, out.ptr());
  EXPECT_EQ(cudaGetLastError(), cudaErrorInvalidConfiguration);
}

TEST(EmuFaultDeathTest, AbortsWhenAsked) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(
      {
        setenv("PRIMA_CUDA_EMU_ABORT", "1", 1);
        Buffer<float> out(32);
        PRIMA_LAUNCH(half_warp_shuffle, 1, 32, 0, nullptr, out.ptr());
        cudaDeviceSynchronize();
      },
      "deadlock, no thread can proceed");
}

}  // namespace
}  // namespace prima::cudaemu
