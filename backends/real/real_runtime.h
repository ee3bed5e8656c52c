// RealRuntime: the engine's clock and event loop on real time (steady_clock, seconds since
// construction). run() processes timers and posted closures on the calling thread (the
// engine's loop thread) until stop(); post() may be called from any thread (device workers,
// HTTP threads) and wakes the loop.
#pragma once

#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <vector>

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
  // Runs until pred() is true (checked after each callback) or stop().
  void run_until(const std::function<bool()>& pred);
  void stop();  // thread-safe
};

}  // namespace prima::real
