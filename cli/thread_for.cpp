// The CLI's threaded ParallelFor (see thread_for.h).
#include "cli/thread_for.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

namespace prima::cli {

ParallelFor thread_for(int threads) {
  return [threads](std::size_t n, const std::function<void(std::size_t)>& body) {
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t i = next++; i < n; i = next++) body(i);
    };
    const std::size_t extra = std::min<std::size_t>(
        n > 0 ? n - 1 : 0, static_cast<std::size_t>(std::max(1, threads) - 1));
    std::vector<std::thread> pool;
    for (std::size_t t = 0; t < extra; ++t) pool.emplace_back(work);
    work();
    for (auto& t : pool) t.join();
  };
}

}  // namespace prima::cli
