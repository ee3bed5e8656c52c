// SimRuntime: the engine's Runtime in simulated time, and the loop that drives SimGrid.
//
// Timers (at/cancel/post) live in the runtime's own event queue: a binary heap ordered by
// (time, order of at() calls), so timers due at the same instant fire first-set first. Each
// pending timer has a slot (a vector reused through a free list) holding its closure; the id
// is the slot and its generation, so a stale id matches nothing, and cancel() frees the slot
// at once (the heap entry is dropped when it reaches the top).
//
// The loop (run(), run_until()) fires these timers itself while SimGrid has nothing to do (no
// activity in flight: ActivityDispatch::active() == 0, and no SimGrid timer): an event then
// costs a heap pop, not a round of SimGrid's engine. SimGrid's clock is left behind and
// brought up to now() (before_activity_start()) just before an activity starts, the only
// moment it matters: an idle SimGrid has no state that depends on time (prima uses no SimGrid
// profiles).
// While activities are in flight SimGrid drives (Engine::run()): a SimGrid timer (the
// sentinel, kept at the earliest own timer) fires the own timers inside SimGrid's rounds, so
// they interleave with activity completions exactly in time, and state changes they make (a
// host turned off) reach in-flight activities at that instant. When the last activity ends
// the sentinel is dropped (on_simgrid_idle()), Engine::run() returns and the loop goes on by
// itself.
// now() is the own clock, or SimGrid's while SimGrid drives.
//
// One SimRuntime per process at a time (there is one SimGrid engine per process): it
// registers itself (current()) so that SimPlatform::run()/run_until() run this loop and
// ActivityDispatch can sync the clock before a start.
//
// Thread-safety: every member is for the simulation loop thread (the one that constructed
// the runtime and calls run()), except post(), which may be called from any thread: from
// another thread the closure goes to a mutex-protected queue. The queue is drained on the loop
// by drain_posted() (call it between run_until() slices, as the wall-clock pacer does) or by a
// periodic pump timer (start_post_pump(period_s); it keeps the simulation alive until
// stop_post_pump(), so run() does not end while it runs).
// Ownership: owns the closures of pending timers. Needs a SimPlatform (the engine) to exist.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "engine/runtime.h"

namespace simgrid::kernel::timer {
class Timer;
}

namespace prima::sim {

class SimRuntime : public Runtime {
 public:
  SimRuntime();
  ~SimRuntime() override;
  SimRuntime(const SimRuntime&) = delete;
  SimRuntime& operator=(const SimRuntime&) = delete;

  // The runtime constructed last and not yet destroyed, or null.
  static SimRuntime* current();

  Time now() const override;
  TimerId at(Time t, std::function<void()> fn) override;
  void cancel(TimerId id) override;
  void post(std::function<void()> fn) override;

  // Runs until no timer is pending and SimGrid has nothing left to do.
  void run();
  // Runs every event due at or before t; the clock then reads t.
  void run_until(Time t);
  // An activity is about to start (ActivityDispatch::start): from the loop, brings SimGrid's
  // clock up to now() when it lags; while SimGrid drives, keeps the sentinel armed.
  void before_activity_start();
  // The last activity in flight ended (ActivityDispatch): SimGrid can hand back to the loop.
  void on_simgrid_idle();

  // Moves closures posted from other threads onto the loop (as timers at now()). Loop only.
  // Returns how many were moved.
  int drain_posted();
  // Drains the cross-thread queue every period_s of simulated time until stopped.
  void start_post_pump(double period_s);
  void stop_post_pump();

  std::size_t pending() const { return pending_; }
  // Timers fired by the loop itself and inside SimGrid's rounds (for tests and benchmarks).
  std::uint64_t fired_directly() const { return fired_directly_; }
  std::uint64_t fired_in_simgrid() const { return fired_in_simgrid_; }

 private:
  struct Entry {
    std::function<void()> fn;
    Time t = 0;                    // when it is due
    std::uint32_t generation = 0;  // bumped when the slot is freed: stale ids and heap
                                   // entries no longer match it
  };
  struct Due {
    Time t;
    std::uint64_t order;  // at() calls so far: ties fire first-set first
    std::uint32_t slot;
    std::uint32_t generation;
  };
  struct Later {
    bool operator()(const Due& a, const Due& b) const {
      return a.t > b.t || (a.t == b.t && a.order > b.order);
    }
  };

  // Drops cancelled entries off the top; the earliest live timer's time or +infinity.
  Time next_due();
  // Pops the top (live) timer, frees its slot and runs its closure at its time.
  void fire_top();
  // Frees a pending timer's slot (its heap entry goes stale).
  void release(std::uint32_t slot);
  bool simgrid_idle() const;
  // loop(until): the body of run() (until = +infinity) and run_until().
  void loop(Time until);
  // SimGrid drives (Engine::run(), or run_until(until) when until is finite) with the sentinel
  // at the earliest own timer.
  void drive(Time until);
  void arm_sentinel();
  bool sentinel_needed() const;
  void disarm_sentinel();
  void on_sentinel();
  void pump();

  std::thread::id loop_thread_;
  Time now_ = 0;
  bool driving_ = false;      // inside Engine::run*(): SimGrid's clock is the clock
  bool in_sentinel_ = false;  // on_sentinel() is firing: it re-arms the sentinel itself
  Time until_ = 0;            // the current drive's bound (+infinity: Engine::run())
  std::vector<Due> heap_;
  std::vector<Entry> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::size_t pending_ = 0;
  std::uint64_t order_ = 0;
  simgrid::kernel::timer::Timer* sentinel_ = nullptr;
  Time sentinel_t_ = 0;
  std::uint64_t fired_directly_ = 0;
  std::uint64_t fired_in_simgrid_ = 0;
  std::mutex mu_;
  std::vector<std::function<void()>> posted_;  // guarded by mu_
  TimerId pump_timer_ = kNoTimer;
  double pump_period_s_ = 0;
};

}  // namespace prima::sim
