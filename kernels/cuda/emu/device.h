// The device side of the CUDA execution model on the CPU (the emulated flavour of
// kernels/cuda): what a kernel source compiled by the host compiler sees in place of nvcc's
// built-ins. Each CUDA thread of a block runs as a fiber (scheduler.cpp); the built-ins here
// read the running fiber's indices, and the synchronising ones (__syncthreads, __syncwarp,
// shuffles, ballots, votes) suspend it until exactly the threads CUDA names have arrived.
//
//   qualifiers  __global__ / __device__ / __host__ / __forceinline__ / __launch_bounds__ vanish;
//               __shared__ is thread_local: one instance per worker thread, and a worker runs
//               one block at a time, so one per block (dynamic shared memory: launch.h).
//   indices     threadIdx, blockIdx, blockDim, gridDim, warpSize (32).
//   sync        __syncthreads[_count|_and|_or], __syncwarp, __shfl[_up|_down|_xor]_sync with
//               CUDA's width and mask rules, __ballot_sync, __any_sync, __all_sync.
//   memory      atomics (std::atomic_ref, so blocks on several workers are safe), __ldg,
//               __threadfence[_block].
//   math        the fast-math intrinsics the kernels use, rsqrtf, __popc, __ffs, __clz.
//
// A source location is a defaulted last argument of every synchronising call, so a wait that
// can never complete is reported with the file and line of each waiting thread. Not here, and
// not checked (docs/cuda-emulation.md): concurrency between blocks, the memory model,
// __activemask, tensor-core instructions, inline PTX.
#pragma once

#include <cuda_runtime_api.h>  // first: its declarations name parameters gridDim, blockDim
#include <vector_types.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <type_traits>

#undef __global__
#define __global__
#undef __device__
#define __device__
#undef __host__
#define __host__
#undef __forceinline__
#define __forceinline__ inline
#undef __noinline__
#define __noinline__
#undef __constant__
#define __constant__
#undef __shared__
#define __shared__ thread_local
#undef __launch_bounds__
#define __launch_bounds__(...)

#define PRIMA_CUDA_EMU 1

namespace prima::cudaemu {

// What the running CUDA thread reads through the index built-ins.
struct BlockInfo {
  uint3 idx{};
  dim3 dim, grid;
  unsigned char* dynamic_shared = nullptr;
};
struct ThreadInfo {
  uint3 idx{};
  const BlockInfo* block = nullptr;
};
// The running CUDA thread of this worker (null outside a kernel).
extern thread_local ThreadInfo* t_thread;

enum class WarpOp : std::uint8_t {
  kShflIdx,
  kShflUp,
  kShflDown,
  kShflXor,
  kSyncwarp,
  kBallot,
  kAny,
  kAll
};
// One warp-level operation by the running thread: waits until every lane of `mask` has
// arrived at an operation of the same kind and mask, then returns this lane's result (the
// source lane's value for shuffles, the mask of lanes with value != 0 for kBallot, 0/1 for the
// votes). param is the shuffle's source lane, delta or lane mask.
std::uint64_t warp_collective(WarpOp op, unsigned mask, std::uint64_t value, int param, int width,
                              const std::source_location& site);
// __syncthreads: waits for every thread of the block; returns how many passed pred != 0.
int block_barrier(int pred, const std::source_location& site);

template <typename T>
std::uint64_t to_bits(T v) {
  static_assert(std::is_trivially_copyable_v<T> && sizeof(T) <= 8,
                "warp shuffles move values of up to 8 bytes");
  std::uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  return b;
}
template <typename T>
T from_bits(std::uint64_t b) {
  T v;
  std::memcpy(&v, &b, sizeof(T));
  return v;
}

}  // namespace prima::cudaemu

#define threadIdx (::prima::cudaemu::t_thread->idx)
#define blockIdx (::prima::cudaemu::t_thread->block->idx)
#define blockDim (::prima::cudaemu::t_thread->block->dim)
#define gridDim (::prima::cudaemu::t_thread->block->grid)
inline constexpr int warpSize = 32;

// ---- block and warp synchronisation --------------------------------------------------------

inline void __syncthreads(std::source_location site = std::source_location::current()) {
  ::prima::cudaemu::block_barrier(0, site);
}
inline int __syncthreads_count(int pred,
                               std::source_location site = std::source_location::current()) {
  return ::prima::cudaemu::block_barrier(pred, site);
}
inline int __syncthreads_and(int pred,
                             std::source_location site = std::source_location::current()) {
  return ::prima::cudaemu::block_barrier(pred, site) == int(blockDim.x * blockDim.y * blockDim.z);
}
inline int __syncthreads_or(int pred, std::source_location site = std::source_location::current()) {
  return ::prima::cudaemu::block_barrier(pred, site) > 0;
}

inline void __syncwarp(unsigned mask = 0xffffffffu,
                       std::source_location site = std::source_location::current()) {
  ::prima::cudaemu::warp_collective(::prima::cudaemu::WarpOp::kSyncwarp, mask, 0, 0, 32, site);
}

template <typename T>
T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize,
              std::source_location site = std::source_location::current()) {
  using namespace ::prima::cudaemu;
  return from_bits<T>(warp_collective(WarpOp::kShflIdx, mask, to_bits(var), src_lane, width, site));
}
template <typename T>
T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                 std::source_location site = std::source_location::current()) {
  using namespace ::prima::cudaemu;
  return from_bits<T>(
      warp_collective(WarpOp::kShflUp, mask, to_bits(var), int(delta), width, site));
}
template <typename T>
T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                   std::source_location site = std::source_location::current()) {
  using namespace ::prima::cudaemu;
  return from_bits<T>(
      warp_collective(WarpOp::kShflDown, mask, to_bits(var), int(delta), width, site));
}
template <typename T>
T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize,
                  std::source_location site = std::source_location::current()) {
  using namespace ::prima::cudaemu;
  return from_bits<T>(
      warp_collective(WarpOp::kShflXor, mask, to_bits(var), lane_mask, width, site));
}
inline unsigned __ballot_sync(unsigned mask, int pred,
                              std::source_location site = std::source_location::current()) {
  using namespace ::prima::cudaemu;
  return unsigned(warp_collective(WarpOp::kBallot, mask, pred != 0, 0, 32, site));
}
inline int __any_sync(unsigned mask, int pred,
                      std::source_location site = std::source_location::current()) {
  using namespace ::prima::cudaemu;
  return int(warp_collective(WarpOp::kAny, mask, pred != 0, 0, 32, site));
}
inline int __all_sync(unsigned mask, int pred,
                      std::source_location site = std::source_location::current()) {
  using namespace ::prima::cudaemu;
  return int(warp_collective(WarpOp::kAll, mask, pred != 0, 0, 32, site));
}

// ---- memory --------------------------------------------------------------------------------

template <typename T>
T __ldg(const T* p) {
  return *p;
}
inline void __threadfence() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}
inline void __threadfence_block() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
}

template <typename T>
T atomicAdd(T* p, T v) {
  return std::atomic_ref<T>(*p).fetch_add(v);
}
template <typename T>
T atomicSub(T* p, T v) {
  return std::atomic_ref<T>(*p).fetch_sub(v);
}
template <typename T>
T atomicExch(T* p, T v) {
  return std::atomic_ref<T>(*p).exchange(v);
}
template <typename T>
T atomicCAS(T* p, T expected, T desired) {
  std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired);
  return expected;  // the old value either way
}
template <typename T>
T atomicMax(T* p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (old < v && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}
template <typename T>
T atomicMin(T* p, T v) {
  std::atomic_ref<T> a(*p);
  T old = a.load();
  while (v < old && !a.compare_exchange_weak(old, v)) {
  }
  return old;
}

// ---- math intrinsics -----------------------------------------------------------------------

inline float __expf(float x) {
  return expf(x);
}
inline float __logf(float x) {
  return logf(x);
}
inline float __sinf(float x) {
  return sinf(x);
}
inline float __cosf(float x) {
  return cosf(x);
}
inline float __powf(float x, float y) {
  return powf(x, y);
}
inline float __fdividef(float x, float y) {
  return x / y;
}
inline float __frcp_rn(float x) {
  return 1.0f / x;
}
inline float __fsqrt_rn(float x) {
  return sqrtf(x);
}
inline float __fmaf_rn(float a, float b, float c) {
  return fmaf(a, b, c);
}
inline float rsqrtf(float x) {
  return 1.0f / sqrtf(x);
}
inline float __saturatef(float x) {
  return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x);
}
inline unsigned __float_as_uint(float f) {
  return ::prima::cudaemu::from_bits<unsigned>(::prima::cudaemu::to_bits(f));
}
inline float __uint_as_float(unsigned u) {
  return ::prima::cudaemu::from_bits<float>(::prima::cudaemu::to_bits(u));
}
inline int __float_as_int(float f) {
  return ::prima::cudaemu::from_bits<int>(::prima::cudaemu::to_bits(f));
}
inline float __int_as_float(int i) {
  return ::prima::cudaemu::from_bits<float>(::prima::cudaemu::to_bits(i));
}
inline int __popc(unsigned x) {
  return __builtin_popcount(x);
}
inline int __ffs(int x) {
  return __builtin_ffs(x);
}
inline int __clz(int x) {
  return x == 0 ? 32 : __builtin_clz(unsigned(x));
}
