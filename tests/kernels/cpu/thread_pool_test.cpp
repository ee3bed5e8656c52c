// Tests for kernels/cpu/thread_pool.h: every index covered exactly once, chunks aligned to
// the grain, chunk/thread indices consistent, for many (n, grain, threads) combinations, and
// repeated back-to-back dispatches.
#include "kernels/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <set>
#include <vector>

namespace prima::kernels {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 4, 7}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.size(), threads);
    for (std::int64_t n : {0, 1, 2, 3, 5, 16, 17, 100, 1000, 4099}) {
      for (std::int64_t grain : {1, 2, 3, 8, 64, 5000}) {
        std::vector<std::atomic<int>> hits(static_cast<std::size_t>(n));
        std::mutex mu;
        std::set<int> thread_ids;
        bool bad_chunk = false;
        pool.parallel_for(
            n,
            [&](std::int64_t b, std::int64_t e, int t) {
              std::lock_guard<std::mutex> lock(mu);
              if (b >= e || b % grain != 0 || (e != n && (e - b) % grain != 0)) bad_chunk = true;
              if (t < 0 || t >= threads || !thread_ids.insert(t).second) bad_chunk = true;
              for (std::int64_t i = b; i < e; ++i) hits[std::size_t(i)].fetch_add(1);
            },
            grain);
        EXPECT_FALSE(bad_chunk) << "n=" << n << " grain=" << grain << " threads=" << threads;
        for (std::int64_t i = 0; i < n; ++i)
          ASSERT_EQ(hits[std::size_t(i)].load(), 1)
              << "n=" << n << " grain=" << grain << " threads=" << threads << " i=" << i;
      }
    }
  }
}

TEST(ThreadPool, UsesAllThreadsWhenThereIsEnoughWork) {
  ThreadPool pool(3);
  std::atomic<int> mask{0};
  pool.parallel_for(300, [&](std::int64_t, std::int64_t, int t) { mask.fetch_or(1 << t); });
  EXPECT_EQ(mask.load(), 7);
}

TEST(ThreadPool, ManyBackToBackDispatches) {
  ThreadPool pool(4);
  std::int64_t total = 0;
  std::vector<std::int64_t> partial(4);
  for (int rep = 0; rep < 5000; ++rep) {
    pool.parallel_for(
        64, [&](std::int64_t b, std::int64_t e, int t) { partial[std::size_t(t)] += e - b; }, 4);
  }
  for (auto p : partial) total += p;
  EXPECT_EQ(total, 64 * 5000);
}

}  // namespace
}  // namespace prima::kernels
