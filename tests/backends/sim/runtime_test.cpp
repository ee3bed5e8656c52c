// SimRuntime: timers on the SimGrid clock fire in order, cancel works, post runs at now,
// cross-thread posts are drained on the loop.
#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "backends/sim/platform.h"
#include "backends/sim/sim_runtime.h"
#include "tests/backends/sim/sim_test_util.h"

namespace prima::sim {
namespace {

std::unique_ptr<SimPlatform> make() {
  auto p = SimPlatform::create(testing::test_topology(1));
  EXPECT_TRUE(p.ok()) << p.status().to_string();
  return std::move(p).value();
}

TEST(SimRuntime, TimersFireInOrderAndCancelWorks) {
  auto p = make();
  SimRuntime rt;
  std::vector<std::pair<int, double>> fired;
  rt.at(3.0, [&] { fired.push_back({3, rt.now()}); });
  rt.at(1.0, [&] { fired.push_back({1, rt.now()}); });
  TimerId two = rt.at(2.0, [&] { fired.push_back({2, rt.now()}); });
  rt.at(1.5, [&] {
    fired.push_back({15, rt.now()});
    rt.at(rt.now() + 0.25, [&] { fired.push_back({175, rt.now()}); });
  });
  rt.cancel(two);
  rt.cancel(two);    // twice: no-op
  rt.cancel(12345);  // unknown: no-op
  p->run();
  ASSERT_EQ(fired.size(), 4u);
  EXPECT_EQ(fired[0], std::make_pair(1, 1.0));
  EXPECT_EQ(fired[1], std::make_pair(15, 1.5));
  EXPECT_EQ(fired[2], std::make_pair(175, 1.75));
  EXPECT_EQ(fired[3], std::make_pair(3, 3.0));
  EXPECT_EQ(rt.pending(), 0u);
}

TEST(SimRuntime, PostRunsAtNowAndCancelFromTimer) {
  auto p = make();
  SimRuntime rt;
  std::vector<double> at;
  TimerId later = rt.at(5.0, [&] { at.push_back(-1); });
  rt.at(2.0, [&] {
    rt.post([&] { at.push_back(rt.now()); });
    rt.cancel(later);
  });
  p->run();
  ASSERT_EQ(at.size(), 1u);
  EXPECT_EQ(at[0], 2.0);
}

TEST(SimRuntime, RunUntilStopsAtTheGivenTime) {
  auto p = make();
  SimRuntime rt;
  int n = 0;
  rt.at(1.0, [&] { ++n; });
  rt.at(3.0, [&] { ++n; });
  p->run_until(2.0);
  EXPECT_EQ(n, 1);
  EXPECT_DOUBLE_EQ(rt.now(), 2.0);
  p->run();
  EXPECT_EQ(n, 2);
}

TEST(SimRuntime, CrossThreadPostIsDrainedOnTheLoop) {
  auto p = make();
  SimRuntime rt;
  int ran = 0;
  std::thread th([&] { rt.post([&] { ++ran; }); });
  th.join();
  EXPECT_EQ(ran, 0);
  rt.at(1.0, [&] { EXPECT_EQ(rt.drain_posted(), 1); });
  p->run();
  EXPECT_EQ(ran, 1);
}

TEST(SimRuntime, PostPump) {
  auto p = make();
  SimRuntime rt;
  double ran_at = -1;
  rt.start_post_pump(0.5);
  rt.at(0.7, [&] {
    std::thread th([&] { rt.post([&] { ran_at = rt.now(); }); });
    th.join();
  });
  rt.at(2.0, [&] { rt.stop_post_pump(); });
  p->run();
  EXPECT_DOUBLE_EQ(ran_at, 1.0);
}

}  // namespace
}  // namespace prima::sim
