// ThreadPool: a fixed set of worker threads for data-parallel kernels, owned by an executor.
// parallel_for splits [0, n) into contiguous chunks, a few per thread, that the threads
// (the calling thread too) take in turn, and returns when all are done; a thread that starts
// late takes fewer. Not reentrant: one parallel_for at a time per pool (the executor's
// worker thread is its only caller).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

namespace prima::kernels {

class ThreadPool {
 public:
  // threads >= 1 (total, the caller included); 1 runs everything on the caller.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const;
  // fn(begin, end, thread_index) over disjoint chunks covering [0, n), in any order and on
  // any thread (one thread may run several chunks, one after another); chunk sizes are
  // multiples of `grain` (except the last). Up to 4 chunks per thread.
  void parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t, int)>& fn,
                    std::int64_t grain = 1);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace prima::kernels
