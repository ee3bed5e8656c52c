// ThreadPool: persistent workers that spin briefly, then sleep on a futex (std::atomic::wait),
// waiting for the next parallel_for. One parallel_for at a time (the owner's thread).
//
// A job is cut into a few chunks per thread, taken in turn from an atomic counter by every
// thread, the caller included, and the caller returns once every chunk is done: it never waits
// for a worker that took no chunk. A worker that starts late (woken from its futex, or its
// core taken by another process or, on a virtual machine, by the hypervisor) therefore takes
// fewer chunks instead of holding the whole job up.
//
// Claims carry the job's number: `next` is (job << 32 | next chunk) and `limit` is
// (job << 32 | chunks). A claim is valid when both name the same job and its index is below
// the count; a worker that comes late to a finished job gets an invalid claim and touches
// nothing else of it (the job's function may be gone by then). A valid claim keeps its job
// alive: the caller cannot return, and so cannot publish the next job, before that chunk is
// done.
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
// Chunks per thread: enough to even out a late thread, few enough that claiming one (an
// atomic increment on a shared line) stays negligible next to its work.
constexpr std::int64_t kChunksPerThread = 4;
constexpr std::uint64_t kIndexMask = 0xffffffffu;
}  // namespace

struct ThreadPool::Impl {
  int threads = 1;
  std::vector<std::thread> workers;
  std::atomic<std::uint32_t> generation{0};  // a futex word: bumped to wake the workers
  std::atomic<bool> stop{false};
  // The current job, written by the caller before `limit` and `next` publish it.
  const std::function<void(std::int64_t, std::int64_t, int)>* fn = nullptr;
  std::int64_t n = 0;
  std::int64_t chunk = 0;
  std::uint32_t job = 0;                            // the caller's job counter
  alignas(64) std::atomic<std::uint64_t> limit{0};  // job << 32 | chunks
  alignas(64) std::atomic<std::uint64_t> next{0};   // job << 32 | next chunk to claim
  alignas(64) std::atomic<std::uint32_t> done{0};   // chunks done (a futex word for the caller)

  // Runs chunks of the current job as thread t until none is left to claim.
  void help(int t) {
    for (;;) {
      const std::uint64_t claim = next.fetch_add(1, std::memory_order_acq_rel);
      const std::uint64_t lim = limit.load(std::memory_order_acquire);
      const std::uint64_t c = claim & kIndexMask, chunks = lim & kIndexMask;
      if ((claim >> 32) != (lim >> 32) || c >= chunks) return;
      const std::int64_t begin = std::int64_t(c) * chunk;
      const std::int64_t end = begin + chunk < n ? begin + chunk : n;
      (*fn)(begin, end, t);
      if (done.fetch_add(1, std::memory_order_acq_rel) + 1 == chunks) done.notify_one();
    }
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
      help(t);
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
  // A few chunks per thread, each a whole number of grains.
  const std::int64_t per_chunk = (grains + used * kChunksPerThread - 1) / (used * kChunksPerThread);
  const std::uint64_t chunks = std::uint64_t((grains + per_chunk - 1) / per_chunk);
  p.fn = &fn;
  p.n = n;
  p.chunk = per_chunk * grain;
  const std::uint64_t job = std::uint64_t(++p.job) << 32;
  p.done.store(0, std::memory_order_relaxed);
  p.limit.store(job | chunks, std::memory_order_release);
  p.next.store(job, std::memory_order_release);
  p.generation.fetch_add(1, std::memory_order_acq_rel);
  p.generation.notify_all();
  p.help(0);
  std::uint32_t d = p.done.load(std::memory_order_acquire);
  for (int i = 0; d != chunks && i < kSpinIterations; ++i) {
    cpu_relax();
    d = p.done.load(std::memory_order_acquire);
  }
  while (d != chunks) {
    p.done.wait(d, std::memory_order_acquire);
    d = p.done.load(std::memory_order_acquire);
  }
  p.fn = nullptr;
}

}  // namespace prima::kernels
