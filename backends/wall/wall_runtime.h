// WallRuntime: the seam's Runtime on the wall clock (steady_clock, seconds since
// construction), for everything that runs the engine's loop in real time: the real backend
// (`prima generate`, `prima serve --backend real`) and the load generator's arrival loop
// (`prima bench`). The engine's components never construct it or read the clock themselves:
// they see a Runtime&. Its own library (prima_wall) because real serving and loadgen/ both
// run on it and neither depends on the other; engine/ reads no clock.
//
// Threading: run() and run_until() process timers and posted closures on the calling thread
// (the loop thread), one callback at a time, each run with the lock released. post() may be
// called from any thread (device workers, HTTP threads, bench workers) and wakes the loop;
// at() and cancel() are called on the loop (engine callbacks) but are also safe from other
// threads; stop() is safe from any thread. Posted closures run in post order, before timers
// that are due at the same moment. One mutex guards the timers and the posted queue.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "engine/runtime.h"

namespace prima {

class WallRuntime : public Runtime {
 public:
  using Clock = std::chrono::steady_clock;

  WallRuntime();
  Time now() const override;
  TimerId at(Time t, std::function<void()> fn) override;
  void cancel(TimerId id) override;
  void post(std::function<void()> fn) override;  // thread-safe

  // Runs the loop until stop() (from a callback or another thread).
  void run();
  // Runs until done() is true (checked before waiting and after each callback) or stop().
  void run_until(const std::function<bool()>& done);
  void stop();  // thread-safe; a later run() starts again
  // Callbacks run so far (timers and posted closures).
  std::uint64_t callbacks_run() const;
  // The steady-clock instant of now() == 0 (for clocks kept beside this one).
  Clock::time_point epoch() const { return start_; }

 private:
  // Takes the next callback to run, waiting for one; false when stop() ended the wait.
  bool next(std::function<void()>* fn);

  const Clock::time_point start_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> posted_;
  std::map<std::pair<Time, TimerId>, std::function<void()>> timers_;
  std::unordered_map<TimerId, Time> when_;
  TimerId next_id_ = 1;
  bool stop_ = false;
  std::uint64_t ran_ = 0;
};

}  // namespace prima
