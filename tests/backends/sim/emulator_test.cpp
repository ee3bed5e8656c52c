// Emulator: the simulated cluster paced to the wall clock. Arrivals posted from another
// thread enter at the simulated time the wall clock has reached; tokens come out at their
// simulated times (never earlier on the wall clock, and only a little later); the clock is
// never ahead of the wall clock; cancellation from another thread frees the KV blocks.
#include "backends/sim/emulator.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "backends/sim/sim_cluster.h"

namespace prima::sim {
namespace {

using Clock = std::chrono::steady_clock;

std::unique_ptr<SimCluster> default_cluster(scenario::Scenario* sc,
                                            const std::vector<std::string>& sets = {}) {
  auto loaded = scenario::load_scenario("", sets);
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  *sc = *loaded;
  auto c = build_sim_cluster(*sc);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return std::move(*c);
}

// Returns the runtime's count of timers fired inside SimGrid's rounds (activities in flight).
std::uint64_t tokens_come_out_on_time(const std::vector<std::string>& sets) {
  scenario::Scenario sc;
  auto cl = default_cluster(&sc, sets);
  EXPECT_TRUE(cl);
  if (!cl) return 0;
  cl->engine->start();
  EmulatorOptions eo;
  eo.speed = 10;
  EXPECT_TRUE(eo.validate().ok());
  Emulator emu(cl->platform.get(), cl->rt.get(), eo);
  const auto wall0 = Clock::now();
  auto wall_s = [&] { return std::chrono::duration<double>(Clock::now() - wall0).count(); };

  struct Tok {
    double sim_s, wall_s;
  };
  std::vector<Tok> toks;  // loop thread only
  double arrival_sim = -1, posted_wall = -1;
  bool ended = false;
  double max_ahead = 0;
  cl->engine->on_token = [&](const Sequence&) { toks.push_back({cl->rt->now(), wall_s()}); };
  cl->engine->on_end = [&](const Sequence& s) {
    ended = true;
    EXPECT_EQ(s.outcome, Outcome::kCompleted);
    emu.stop();
  };
  std::thread client([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    posted_wall = wall_s();
    cl->rt->post([&] {
      Request r;
      r.arrival_s = cl->rt->now();
      arrival_sim = r.arrival_s;
      r.prompt_tokens = 100;
      r.max_output_tokens = 20;
      cl->engine->submit(std::move(r));
    });
    emu.wake();
  });
  emu.run([&] { max_ahead = std::max(max_ahead, cl->rt->now() - emu.sim_time_now()); });
  client.join();
  EXPECT_TRUE(ended);
  EXPECT_EQ(toks.size(), 20u);
  // Never ahead of the wall clock.
  EXPECT_LE(max_ahead, 1e-3 * eo.speed);
  // The arrival entered at the time the wall clock had reached when it was posted.
  EXPECT_NEAR(arrival_sim, posted_wall * eo.speed, 0.02 * eo.speed);
  // Each token on the wall clock: not before its simulated time, and soon after (a slice is
  // 0.5 ms; the bound leaves room for a loaded CI machine).
  for (const Tok& t : toks) {
    const double due_wall = t.sim_s / eo.speed;
    EXPECT_GE(t.wall_s, due_wall - 1e-3);
    EXPECT_LE(t.wall_s, due_wall + 0.02) << "a token came out late";
  }
  EXPECT_GT(toks.back().sim_s, toks.front().sim_s);  // decode steps take simulated time
  EXPECT_GT(emu.slices(), 10);
  EXPECT_LT(emu.lag_wall_s(), 0.005);  // 10x real time is easy: the loop keeps up
  return cl->rt->fired_in_simgrid();
}

TEST(Emulator, TokensComeOutAtTheirSimulatedTimesOnTheWallClock) {
  tokens_come_out_on_time({});
}

// The same with stages as Execs and the pipeline sends as SimGrid flows: the pacer's slices
// then run while SimGrid has activities in flight (its timers fire inside SimGrid's rounds).
TEST(Emulator, TokensComeOutOnTimeWithSimGridActivitiesInFlight) {
  EXPECT_GT(
      tokens_come_out_on_time({"sim.exclusive_links_analytic=false", "sim.timer_stages=false"}),
      0u);
}

TEST(Emulator, CancelFromAnotherThreadFreesTheBlocks) {
  scenario::Scenario sc;
  auto cl = default_cluster(&sc);
  ASSERT_TRUE(cl);
  cl->engine->start();
  EmulatorOptions eo;
  eo.speed = 20;
  Emulator emu(cl->platform.get(), cl->rt.get(), eo);
  std::atomic<int> tokens{0};
  std::atomic<bool> ended{false};
  std::string reason;
  cl->engine->on_token = [&](const Sequence&) { ++tokens; };
  cl->engine->on_end = [&](const Sequence& s) {
    reason = s.reason;
    ended = true;
  };
  std::atomic<std::int64_t> in_system{-1}, used_blocks{-1};
  std::thread client([&] {
    cl->rt->post([&] {
      Request r;
      r.id = 7;
      r.arrival_s = cl->rt->now();
      r.prompt_tokens = 500;
      r.max_output_tokens = 3000;  // within the model's 4096-token context
      cl->engine->submit(std::move(r));
    });
    emu.wake();
    while (tokens < 3 && !ended) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    cl->rt->post([&] { cl->engine->cancel(7, "client disconnected"); });
    emu.wake();
    while (!ended) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    emu.stop();
  });
  emu.run([&] {
    in_system = cl->engine->in_system();
    std::int64_t used = 0;
    for (const auto& r : cl->engine->replicas()) used += r->kv().used_blocks();
    used_blocks = used;
  });
  client.join();
  EXPECT_EQ(reason, "client disconnected");
  EXPECT_GE(tokens.load(), 3);
  EXPECT_LT(tokens.load(), 3000);
  EXPECT_EQ(in_system.load(), 0);
  EXPECT_EQ(used_blocks.load(), 0);
}

TEST(Emulator, RejectsASpeedThatIsNotPositive) {
  EmulatorOptions eo;
  eo.speed = 0;
  EXPECT_FALSE(eo.validate().ok());
  eo.speed = -3;
  EXPECT_NE(eo.validate().message().find("--speed"), std::string::npos);
}

}  // namespace
}  // namespace prima::sim
