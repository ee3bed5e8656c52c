// run_grid (grid.h): a small persistent pool of workers that claim block numbers in turn.
#include "kernels/cuda/emu/grid.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "kernels/cuda/emu/block.h"

namespace prima::cudaemu {

namespace {

// Helpers that run a job's tasks beside the caller; one job at a time.
class Workers {
 public:
  explicit Workers(int helpers) {
    for (int i = 0; i < helpers; ++i) threads_.emplace_back([this] { loop(); });
  }
  ~Workers() {
    {
      std::lock_guard<std::mutex> lk(m_);
      quit_ = true;
    }
    cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }

  // Calls task(i) for i < n, spread over the helpers and the caller; returns when all are done.
  void run(std::size_t n, const std::function<void(std::size_t)>& task) {
    std::lock_guard<std::mutex> one_job(job_m_);
    {
      std::lock_guard<std::mutex> lk(m_);
      task_ = &task;
      n_ = n;
      next_ = 0;
      busy_ = threads_.size();
      ++generation_;
    }
    cv_.notify_all();
    drain();
    std::unique_lock<std::mutex> lk(m_);
    done_cv_.wait(lk, [this] { return busy_ == 0; });
    task_ = nullptr;
  }

 private:
  void drain() {
    for (std::size_t i; (i = next_.fetch_add(1)) < n_;) (*task_)(i);
  }
  void loop() {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(m_);
        cv_.wait(lk, [&] { return quit_ || generation_ != seen; });
        if (quit_) return;
        seen = generation_;
      }
      drain();
      std::lock_guard<std::mutex> lk(m_);
      if (--busy_ == 0) done_cv_.notify_all();
    }
  }

  std::mutex job_m_, m_;
  std::condition_variable cv_, done_cv_;
  std::vector<std::thread> threads_;
  const std::function<void(std::size_t)>* task_ = nullptr;
  std::size_t n_ = 0, busy_ = 0;
  std::atomic<std::size_t> next_{0};
  std::uint64_t generation_ = 0;
  bool quit_ = false;
};

Workers& workers() {
  static Workers w(grid_workers() - 1);
  return w;
}

// Dynamic shared memory of the blocks this worker runs, 128-byte aligned.
unsigned char* dynamic_shared(std::size_t bytes) {
  thread_local std::vector<unsigned char> buf;
  if (buf.size() < bytes + 128) buf.resize(bytes + 128);
  auto p = reinterpret_cast<std::uintptr_t>(buf.data());
  return buf.data() + ((128 - p % 128) % 128);
}

}  // namespace

int grid_workers() {
  static const int n = [] {
    if (const char* e = std::getenv("PRIMA_CUDA_EMU_WORKERS"); e && std::atoi(e) > 0)
      return std::min(std::atoi(e), 256);
    return std::clamp(int(std::thread::hardware_concurrency()), 1, 8);
  }();
  return n;
}

std::string run_grid(const Launch& l) {
  const dim3 g = l.grid;
  const std::size_t blocks = std::size_t(g.x) * g.y * g.z;
  std::mutex m;
  std::size_t fault_block = blocks;
  std::string fault;
  std::atomic<bool> stop{false};
  auto one = [&](std::size_t i) {
    if (stop.load(std::memory_order_relaxed)) return;
    const uint3 idx{unsigned(i % g.x), unsigned(i / g.x % g.y),
                    unsigned(i / (std::size_t(g.x) * g.y))};
    BlockRun b(l, idx, dynamic_shared(l.shared_bytes));
    std::string f = b.run();
    if (f.empty()) return;
    stop = true;
    std::lock_guard<std::mutex> lk(m);
    if (i < fault_block) fault_block = i, fault = std::move(f);
  };
  if (blocks == 1 || grid_workers() == 1) {
    for (std::size_t i = 0; i < blocks && !stop; ++i) one(i);
  } else {
    workers().run(blocks, one);
  }
  return fault;
}

}  // namespace prima::cudaemu
