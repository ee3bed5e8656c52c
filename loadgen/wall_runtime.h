// A Runtime on the wall clock (steady clock, seconds since construction) whose loop runs on
// the thread that calls run(): the bench drives the engine's WorkloadDriver with it, so
// arrivals are posted at their real times and closed-loop users hear of finished requests.
//
// Threading: at() and cancel() are called from the loop (by the driver); post() from any
// thread (workers report completions). run() returns when `finished()` (checked on the loop
// after every event) is true. One mutex guards the timers and the posted queue.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>

#include "engine/runtime.h"

namespace prima::loadgen {

class WallRuntime : public Runtime {
 public:
  WallRuntime() : t0_(std::chrono::steady_clock::now()) {}
  Time now() const override;
  TimerId at(Time t, std::function<void()> fn) override;
  void cancel(TimerId id) override;
  void post(std::function<void()> fn) override;

  // Runs timers at their times and posted closures as they come until finished() is true.
  void run(const std::function<bool()>& finished);
  // The steady-clock instant of now() == 0.
  std::chrono::steady_clock::time_point epoch() const { return t0_; }

 private:
  std::chrono::steady_clock::time_point t0_;
  std::mutex mu_;
  std::condition_variable cv_;
  TimerId next_ = 1;
  std::map<std::pair<Time, TimerId>, std::function<void()>> timers_;
  std::map<TimerId, Time> when_;
  std::deque<std::function<void()>> posted_;
};

}  // namespace prima::loadgen
