// One thread block of a launch on the CPU execution layer: its CUDA threads as fibers on one
// worker, scheduled cooperatively. A thread runs until it finishes or waits at a barrier or a
// warp operation; the wait ends when exactly the threads CUDA names have arrived:
//   __syncthreads      every thread of the block, all at the same call site (a barrier reached
//                      at two places, or after some threads returned, never completes);
//   warp operations    every lane of the mask, at an operation of the same kind and mask
//                      (groups of different masks may be open at once); each lane must be in
//                      its own mask, and a shuffle must read a lane of the mask.
// When no thread can proceed the block stops and run() returns a report naming the kernel,
// the block, and each group of threads with what it waits for and where (file:line), and the
// threads that have returned; the waiting fibers are then unwound (their destructors run).
// Not thread-safe: one BlockRun per worker at a time.
#pragma once

#include <deque>
#include <source_location>
#include <string>
#include <vector>

#include "kernels/cuda/emu/device.h"
#include "kernels/cuda/emu/fiber.h"
#include "kernels/cuda/emu/launch.h"

namespace prima::cudaemu {

class BlockRun {
 public:
  // `dynamic_shared` holds the launch's shared_bytes for this block.
  BlockRun(const Launch& launch, uint3 block_idx, unsigned char* dynamic_shared);
  BlockRun(const BlockRun&) = delete;
  BlockRun& operator=(const BlockRun&) = delete;
  ~BlockRun();

  // Runs every thread to its end: "" then, else the fault report.
  std::string run();

  // From the running CUDA thread (device.h's built-ins).
  int barrier(int pred, const std::source_location& site);
  std::uint64_t warp(WarpOp op, unsigned mask, std::uint64_t value, int param, int width,
                     const std::source_location& site);

 private:
  enum class State : std::uint8_t { kUnstarted, kRunnable, kBarrier, kWarp, kDone, kFaulted };
  struct Thread : ThreadInfo {
    int linear = 0;
    State state = State::kUnstarted;
    fiber::Context ctx = nullptr;
    fiber::Stack stack;
    std::source_location site;
    WarpOp op{};
    unsigned mask = 0;
    int param = 0, width = 32;
    std::uint64_t value = 0, result = 0;
  };
  struct WarpGroup {
    unsigned mask = 0;
    WarpOp op{};
    unsigned arrived = 0;
  };

  static void entry(fiber::Transfer t);
  void start(Thread& t);
  void resume(Thread& t);
  void suspend(Thread& t);
  // Unwinds every fiber that has started and not finished (after a fault or a deadlock).
  void unwind_all();
  void complete(int warp, const WarpGroup& g);
  [[noreturn]] void fault(Thread& t, const std::string& what);
  Thread& current();
  std::string header() const;
  std::string deadlock_report() const;
  // One line per group of waiting threads (what and where), then the returned ones.
  std::string waiting_list() const;

  const Launch& launch_;
  BlockInfo info_;
  std::vector<Thread> threads_;
  std::vector<std::vector<WarpGroup>> warps_;
  std::deque<Thread*> runnable_;
  std::size_t next_ = 0, done_ = 0, at_barrier_ = 0;
  fiber::Context worker_ = nullptr;
  bool unwinding_ = false;
  std::string fault_;
};

// "file:line (function)" of a call site, the file relative to the source tree.
std::string site_text(const std::source_location& s);
const char* op_name(WarpOp op);

}  // namespace prima::cudaemu
