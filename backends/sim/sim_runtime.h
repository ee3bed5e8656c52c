// SimRuntime: the engine's Runtime on the SimGrid clock.
//
// now() is Engine::get_clock(); at() sets a SimGrid kernel timer (kernel::timer::Timer::set)
// and keeps its Timer* and closure in a slot (a vector reused through a free list; the id
// is the slot and its generation, so a stale id matches nothing) so cancel() can
// Timer::remove() it; a fired timer's slot is freed first, then its closure runs. post() from
// the loop thread is a timer at now().
//
// Thread-safety: every member is for the simulation loop thread (the one that constructed
// the runtime and calls run()), except post(), which may be called from any thread: from
// another thread the closure goes to a mutex-protected queue. The queue is drained on the loop
// by drain_posted() (call it between run_until() slices, as the wall-clock pacer will) or by a
// periodic pump timer (start_post_pump(period_s); it keeps the simulation alive until
// stop_post_pump(), so Engine::run() does not end while it runs).
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

  Time now() const override;
  TimerId at(Time t, std::function<void()> fn) override;
  void cancel(TimerId id) override;
  void post(std::function<void()> fn) override;

  // Moves closures posted from other threads onto the loop (as timers at now()). Loop only.
  // Returns how many were moved.
  int drain_posted();
  // Drains the cross-thread queue every period_s of simulated time until stopped.
  void start_post_pump(double period_s);
  void stop_post_pump();

  std::size_t pending() const { return pending_; }

 private:
  struct Entry {
    simgrid::kernel::timer::Timer* timer = nullptr;  // null: the slot is free
    std::function<void()> fn;
    std::uint32_t generation = 0;  // bumped when the slot is freed
  };
  // The live entry of id, or null (fired, cancelled, or never issued).
  Entry* find(TimerId id);
  void release(Entry* e);
  void fire(TimerId id);
  void pump();

  std::thread::id loop_thread_;
  std::vector<Entry> slots_;
  std::vector<std::uint32_t> free_slots_;
  std::size_t pending_ = 0;
  std::mutex mu_;
  std::vector<std::function<void()>> posted_;  // guarded by mu_
  TimerId pump_timer_ = kNoTimer;
  double pump_period_s_ = 0;
};

}  // namespace prima::sim
