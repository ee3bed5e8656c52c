// Tests for kernels/cpu/thread_pool.h: every index covered exactly once, chunks aligned to
// the grain, at most 4 chunks per thread, thread indices in range, for many (n, grain,
// threads) combinations; repeated back-to-back dispatches; a slow thread takes fewer chunks.
#include "kernels/cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
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
        int chunks = 0;
        bool bad_chunk = false;
        pool.parallel_for(
            n,
            [&](std::int64_t b, std::int64_t e, int t) {
              std::lock_guard<std::mutex> lock(mu);
              if (b >= e || b % grain != 0 || (e != n && (e - b) % grain != 0)) bad_chunk = true;
              if (t < 0 || t >= threads) bad_chunk = true;
              ++chunks;
              for (std::int64_t i = b; i < e; ++i) hits[std::size_t(i)].fetch_add(1);
            },
            grain);
        EXPECT_FALSE(bad_chunk) << "n=" << n << " grain=" << grain << " threads=" << threads;
        EXPECT_LE(chunks, 4 * threads) << "n=" << n << " grain=" << grain;
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
  // 12 chunks of 50 ms each: the caller alone would need 600 ms, far longer than a worker
  // needs to wake up and take its share.
  pool.parallel_for(300, [&](std::int64_t, std::int64_t, int t) {
    mask.fetch_or(1 << t);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  });
  EXPECT_EQ(mask.load(), 7);
}

// A thread stalled in its first chunk (here: sleeping; in practice a worker whose core was
// taken) does not hold the others' work: they take the remaining chunks, and a job whose
// chunks were all taken by others does not wait for a worker that never started one.
TEST(ThreadPool, AStalledThreadTakesFewerChunks) {
  ThreadPool pool(2);
  std::mutex mu;
  int chunks[2] = {0, 0};
  std::vector<std::atomic<int>> hits(800);
  pool.parallel_for(800, [&](std::int64_t b, std::int64_t e, int t) {
    if (t == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::lock_guard<std::mutex> lock(mu);
    ++chunks[t];
    for (std::int64_t i = b; i < e; ++i) hits[std::size_t(i)].fetch_add(1);
  });
  for (std::size_t i = 0; i < hits.size(); ++i) ASSERT_EQ(hits[i].load(), 1) << i;
  EXPECT_EQ(chunks[0] + chunks[1], 8);  // 4 per thread
  EXPECT_LE(chunks[1], 1);              // the stalled thread: its first chunk at most
  EXPECT_GE(chunks[0], 7);
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
