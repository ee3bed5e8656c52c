// WallRuntime: timers fire in time order at (not before) their time, cancel works, post is
// safe from other threads and wakes a sleeping loop, posted closures go before due timers,
// stop ends run(), epoch() is now()'s zero.
#include "backends/wall/wall_runtime.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>
#include <vector>

namespace prima {
namespace {

TEST(WallRuntime, TimersFireInOrderNotEarly) {
  WallRuntime rt;
  std::vector<int> order;
  std::vector<double> fired_at;
  const double t0 = rt.now();
  rt.at(t0 + 0.03, [&] { order.push_back(3), fired_at.push_back(rt.now()); });
  rt.at(t0 + 0.01, [&] { order.push_back(1), fired_at.push_back(rt.now()); });
  rt.at(t0 + 0.02, [&] { order.push_back(2), fired_at.push_back(rt.now()); });
  rt.run_until([&] { return order.size() == 3; });
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
  EXPECT_GE(fired_at[0], t0 + 0.01);
  EXPECT_GE(fired_at[2], t0 + 0.03);
}

TEST(WallRuntime, CancelledTimerNeverFires) {
  WallRuntime rt;
  bool fired = false, done = false;
  TimerId id = rt.at(rt.now() + 0.005, [&] { fired = true; });
  rt.cancel(id);
  rt.cancel(id);     // twice: no-op
  rt.cancel(12345);  // unknown: no-op
  rt.at(rt.now() + 0.02, [&] { done = true; });
  rt.run_until([&] { return done; });
  EXPECT_FALSE(fired);
}

TEST(WallRuntime, PostFromOtherThreadsWakesTheLoop) {
  WallRuntime rt;
  int seen = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&rt, &seen] {
      for (int i = 0; i < 250; ++i) rt.post([&seen] { ++seen; });  // loop thread only
    });
  rt.run_until([&] { return seen == 1000; });
  for (auto& th : threads) th.join();
  EXPECT_EQ(seen, 1000);
  EXPECT_GE(rt.callbacks_run(), 1000u);
}

TEST(WallRuntime, PostedClosuresRunBeforeDueTimersAndDoneIsCheckedFirst) {
  WallRuntime rt;
  rt.run_until([] { return true; });  // already done: returns without waiting
  EXPECT_EQ(rt.callbacks_run(), 0u);
  std::vector<int> order;
  rt.at(rt.now(), [&] { order.push_back(2); });
  rt.post([&] { order.push_back(1); });
  rt.run_until([&] { return order.size() == 2; });
  EXPECT_EQ(order, (std::vector<int>{1, 2}));
}

TEST(WallRuntime, EpochIsTheInstantOfTimeZero) {
  WallRuntime rt;
  const double since_epoch =
      std::chrono::duration<double>(WallRuntime::Clock::now() - rt.epoch()).count();
  EXPECT_GE(rt.now(), since_epoch);
  EXPECT_LT(rt.now() - since_epoch, 1.0);
}

TEST(WallRuntime, StopFromAnotherThreadEndsRun) {
  WallRuntime rt;
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    rt.stop();
  });
  rt.run();  // returns only because of stop()
  stopper.join();
  SUCCEED();
}

}  // namespace
}  // namespace prima
