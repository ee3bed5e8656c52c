// SimRuntime: timers fire in order (ties first-set first), cancel works, post runs at now,
// cross-thread posts are drained on the loop; with nothing in flight the loop fires timers
// itself and SimGrid's clock follows only when an activity starts; with activities in flight
// timers interleave with their completions at the right instants.
#include <gtest/gtest.h>

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>
#include <thread>
#include <vector>

#include "backends/sim/activity_dispatch.h"
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

TEST(SimRuntime, TiesFireInTheOrderTheyWereSet) {
  auto p = make();
  SimRuntime rt;
  std::vector<int> order;
  rt.at(1.0, [&] {
    order.push_back(1);
    rt.post([&] { order.push_back(4); });  // at now: after the two already due
  });
  rt.at(1.0, [&] { order.push_back(2); });
  rt.at(1.0, [&] { order.push_back(3); });
  p->run();
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3, 4}));
}

// Records when its activity ended, on the runtime's clock.
struct EndProbe : CompletionTarget {
  explicit EndProbe(SimRuntime* r) : rt(r) {}
  SimRuntime* rt;
  std::vector<double> ends;
  void on_activity_end(const simgrid::s4u::Activity&, bool ok) override {
    EXPECT_TRUE(ok);
    ends.push_back(rt->now());
  }
};

// An Exec of `seconds` at the GPU's speed on GPU 0, started through ActivityDispatch.
simgrid::s4u::ExecPtr start_exec(SimPlatform* p, EndProbe* probe, double seconds) {
  simgrid::s4u::Host* h = p->host_of(0);
  simgrid::s4u::ExecPtr e =
      simgrid::s4u::Exec::init()->set_host(h)->set_flops_amount(seconds * h->get_speed());
  e->set_data(static_cast<CompletionTarget*>(probe));
  ActivityDispatch::start(e);
  return e;
}

TEST(SimRuntime, WithNothingInFlightTimersFireWithoutSimGrid) {
  auto p = make();
  SimRuntime rt;
  std::vector<double> at;
  for (double t : {0.5, 1.0, 7.25}) rt.at(t, [&] { at.push_back(rt.now()); });
  p->run();
  EXPECT_EQ(at, (std::vector<double>{0.5, 1.0, 7.25}));
  EXPECT_EQ(rt.fired_directly(), 3u);
  EXPECT_EQ(rt.fired_in_simgrid(), 0u);
  // SimGrid was never needed: its clock stayed where it was.
  EXPECT_EQ(simgrid::s4u::Engine::get_clock(), 0.0);
  EXPECT_EQ(rt.now(), 7.25);
}

TEST(SimRuntime, TimersInterleaveWithActivitiesInFlight) {
  auto p = make();
  SimRuntime rt;
  EndProbe probe(&rt);
  std::vector<std::pair<int, double>> fired;
  simgrid::s4u::ExecPtr exec;
  // At 1: an Exec of 2 s starts (SimGrid's clock is brought from 0 to 1 first), ending at 3.
  rt.at(1.0, [&] {
    fired.push_back({1, rt.now()});
    exec = start_exec(p.get(), &probe, 2.0);
    EXPECT_EQ(simgrid::s4u::Engine::get_clock(), 1.0);
    EXPECT_EQ(ActivityDispatch::active(), 1);
  });
  rt.at(2.0, [&] { fired.push_back({2, rt.now()}); });  // during the Exec: inside SimGrid
  TimerId cancelled = rt.at(3.5, [&] { fired.push_back({-1, rt.now()}); });
  rt.at(2.5, [&] { rt.cancel(cancelled); });
  rt.at(5.0, [&] { fired.push_back({5, rt.now()}); });  // after it: by the loop again
  p->run();
  ASSERT_EQ(probe.ends.size(), 1u);
  EXPECT_DOUBLE_EQ(probe.ends[0], 3.0);
  EXPECT_EQ(fired, (std::vector<std::pair<int, double>>{{1, 1.0}, {2, 2.0}, {5, 5.0}}));
  EXPECT_EQ(ActivityDispatch::active(), 0);
  EXPECT_GE(rt.fired_in_simgrid(), 2u);  // 2.0 and 2.5
  EXPECT_GE(rt.fired_directly(), 2u);    // 1.0 and 5.0
  EXPECT_EQ(rt.now(), 5.0);
}

TEST(SimRuntime, ACancelledTimerDoesNotMoveTheClock) {
  auto p = make();
  SimRuntime rt;
  EndProbe probe(&rt);
  simgrid::s4u::ExecPtr exec;
  TimerId late = rt.at(10.0, [] { ADD_FAILURE() << "cancelled"; });
  rt.at(1.0, [&] { exec = start_exec(p.get(), &probe, 2.0); });
  rt.at(2.0, [&] { rt.cancel(late); });  // while SimGrid drives, its sentinel aims at 10
  p->run();
  ASSERT_EQ(probe.ends.size(), 1u);
  EXPECT_DOUBLE_EQ(rt.now(), 3.0);  // the last thing that happened: the Exec's end
}

TEST(SimRuntime, RunUntilKeepsTimersInPlaceWhileActivitiesRun) {
  auto p = make();
  SimRuntime rt;
  EndProbe probe(&rt);
  simgrid::s4u::ExecPtr exec;
  std::vector<double> at;
  rt.at(1.0, [&] { exec = start_exec(p.get(), &probe, 4.0); });  // ends at 5
  rt.at(2.0, [&] { at.push_back(rt.now()); });
  rt.at(3.0, [&] { at.push_back(rt.now()); });
  p->run_until(2.5);
  EXPECT_EQ(at, (std::vector<double>{2.0}));
  EXPECT_DOUBLE_EQ(rt.now(), 2.5);
  p->run();
  EXPECT_EQ(at, (std::vector<double>{2.0, 3.0}));
  ASSERT_EQ(probe.ends.size(), 1u);
  EXPECT_DOUBLE_EQ(probe.ends[0], 5.0);
}

// Starting an activity behind the runtime's back would run it on a stale clock and leave it
// uncounted: it aborts with an internal error instead.
TEST(SimRuntimeDeathTest, AnActivityStartedAroundActivityDispatchAborts) {
  auto p = make();
  SimRuntime rt;
  ActivityDispatch::install();
  EXPECT_DEATH(
      { simgrid::s4u::Exec::init()->set_host(p->host_of(0))->set_flops_amount(1e9)->start(); },
      "without ActivityDispatch::start");
}

}  // namespace
}  // namespace prima::sim
