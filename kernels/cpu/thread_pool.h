// ThreadPool: a fixed set of worker threads for data-parallel kernels, owned by an executor.
// parallel_for splits [0, n) into contiguous chunks, one per thread (the calling thread
// works too), and returns when all are done. Not reentrant: one parallel_for at a time per
// pool (the executor's worker thread is its only caller).
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
  // fn(begin, end, thread_index) over disjoint chunks covering [0, n); chunk sizes are
  // multiples of `grain` (except the last).
  void parallel_for(std::int64_t n, const std::function<void(std::int64_t, std::int64_t, int)>& fn,
                    std::int64_t grain = 1);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace prima::kernels
