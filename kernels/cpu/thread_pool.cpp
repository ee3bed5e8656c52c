// ThreadPool: persistent workers that spin briefly, then sleep on a futex (std::atomic::wait),
// waiting for the next parallel_for. One parallel_for at a time (the owner's thread); the
// job is published through a generation counter and completion is counted down atomically.
#include "kernels/cpu/thread_pool.h"

#include <atomic>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace prima::kernels {

namespace {
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}
// Spin iterations (pause instructions, ~10-140 cycles each depending on the CPU) before
// sleeping: enough to bridge the gap between the kernels of one decode step (a few
// microseconds), short enough not to starve other threads when cores are oversubscribed.
constexpr int kSpinIterations = 2000;
}  // namespace

struct ThreadPool::Impl {
  int threads = 1;
  std::vector<std::thread> workers;
  std::atomic<std::uint32_t> generation{0};  // a futex word
  std::atomic<int> pending{0};
  std::atomic<bool> stop{false};
  // The current job (valid while pending > 0).
  const std::function<void(std::int64_t, std::int64_t, int)>* fn = nullptr;
  std::int64_t n = 0;
  std::int64_t chunk = 0;

  void run_chunk(int t) const {
    const std::int64_t begin = std::int64_t(t) * chunk;
    if (begin >= n) return;
    const std::int64_t end = begin + chunk < n ? begin + chunk : n;
    (*fn)(begin, end, t);
  }

  void worker(int t) {
    std::uint32_t seen = 0;
    for (;;) {
      std::uint32_t g = generation.load(std::memory_order_acquire);
      for (int i = 0; g == seen && i < kSpinIterations; ++i) {
        cpu_relax();
        g = generation.load(std::memory_order_acquire);
      }
      while (g == seen) {
        generation.wait(seen, std::memory_order_acquire);
        g = generation.load(std::memory_order_acquire);
      }
      seen = g;
      if (stop.load(std::memory_order_acquire)) return;
      run_chunk(t);
      if (pending.fetch_sub(1, std::memory_order_acq_rel) == 1) pending.notify_one();
    }
  }
};

ThreadPool::ThreadPool(int threads) : impl_(std::make_unique<Impl>()) {
  impl_->threads = threads < 1 ? 1 : threads;
  for (int t = 1; t < impl_->threads; ++t)
    impl_->workers.emplace_back([this, t] { impl_->worker(t); });
}

ThreadPool::~ThreadPool() {
  impl_->stop.store(true, std::memory_order_release);
  impl_->generation.fetch_add(1, std::memory_order_acq_rel);
  impl_->generation.notify_all();
  for (auto& w : impl_->workers) w.join();
}

int ThreadPool::size() const {
  return impl_->threads;
}

void ThreadPool::parallel_for(std::int64_t n,
                              const std::function<void(std::int64_t, std::int64_t, int)>& fn,
                              std::int64_t grain) {
  if (n <= 0) return;
  if (grain < 1) grain = 1;
  Impl& p = *impl_;
  const std::int64_t grains = (n + grain - 1) / grain;
  const int used = static_cast<int>(grains < p.threads ? grains : p.threads);
  if (used <= 1) {
    fn(0, n, 0);
    return;
  }
  p.fn = &fn;
  p.n = n;
  p.chunk = (grains + p.threads - 1) / p.threads * grain;
  const int workers = p.threads - 1;
  p.pending.store(workers, std::memory_order_relaxed);
  p.generation.fetch_add(1, std::memory_order_acq_rel);
  p.generation.notify_all();
  p.run_chunk(0);
  int left = p.pending.load(std::memory_order_acquire);
  for (int i = 0; left != 0 && i < kSpinIterations; ++i) {
    cpu_relax();
    left = p.pending.load(std::memory_order_acquire);
  }
  while (left != 0) {
    p.pending.wait(left, std::memory_order_acquire);
    left = p.pending.load(std::memory_order_acquire);
  }
  p.fn = nullptr;
}

}  // namespace prima::kernels
