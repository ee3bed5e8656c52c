// RealRuntime: the engine's clock and event loop on real time (steady_clock, seconds since
// construction). run() processes timers and posted closures on the calling thread (the
// engine's loop thread) until stop(); post() may be called from any thread (device workers,
// HTTP threads) and wakes the loop. at() and cancel() are called on the loop (engine
// callbacks) but are also safe from other threads. Posted closures run in post order, before
// timers that are due at the same moment.
#pragma once

#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "engine/runtime.h"

namespace prima::real {

class RealRuntime : public Runtime {
 public:
  RealRuntime();
  Time now() const override;
  TimerId at(Time t, std::function<void()> fn) override;
  void cancel(TimerId id) override;
  void post(std::function<void()> fn) override;  // thread-safe

  // Runs the loop until stop() (from a callback or another thread).
  void run();
  // Runs until pred() is true (checked before waiting and after each callback) or stop().
  void run_until(const std::function<bool()>& pred);
  void stop();  // thread-safe; a later run() starts again
  // Callbacks run so far (timers and posted closures).
  std::uint64_t callbacks_run() const;

 private:
  using Clock = std::chrono::steady_clock;
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

}  // namespace prima::real
