// Emulator: paces the SimGrid clock to the wall clock, so the simulated cluster answers HTTP
// clients at the times it would (`prima serve --backend sim`).
//
// The loop advances the simulation in slices: each slice runs every event up to the
// simulated time the wall clock has reached (sim = (wall - start) x speed), never beyond, so
// the simulation is never ahead of the wall clock; then closures posted from other threads
// (HTTP arrivals, cancellations) enter at that simulated time; then the loop sleeps until the
// next slice (slice_wall_s) or until wake() (a post) or stop(). Tokens are therefore
// delivered at most one slice (plus the loop's own work) after their simulated time is due.
// `speed` > 1 runs faster than real time (tests), < 1 slower.
//
// Thread-safety: run() and on_slice run on the loop thread (the thread that built the
// SimRuntime); wake(), stop() and sim_time_now() may be called from any thread.
// Ownership: borrows the platform and the runtime.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>

#include "backends/sim/platform.h"
#include "backends/sim/sim_runtime.h"
#include "engine/core/status.h"

namespace prima::sim {

struct EmulatorOptions {
  double speed = 1.0;            // simulated seconds per wall-clock second
  double slice_wall_s = 0.0005;  // longest wall-clock sleep between two slices
  Status validate() const;
};

class Emulator {
 public:
  Emulator(SimPlatform* platform, SimRuntime* rt, EmulatorOptions opts);

  // Paces the simulation until stop(). on_slice (optional) runs on the loop after each
  // slice, e.g. to publish the engine's gauges to other threads.
  void run(const std::function<void()>& on_slice = {});
  // Thread-safe: a closure was posted to the runtime; run the next slice now.
  void wake();
  // Thread-safe: run() returns after the current slice.
  void stop();
  // Thread-safe: the simulated time the wall clock has reached (valid once run() started).
  double sim_time_now() const;
  // Slices run so far.
  std::int64_t slices() const { return slices_.load(); }
  // Thread-safe: how far (wall-clock seconds) the simulation trailed the wall clock at the
  // end of the last slice: ~0 while the loop keeps up; grows when simulating `speed` x real
  // time needs more CPU than there is (the simulation is then slower than asked, never ahead).
  double lag_wall_s() const { return lag_wall_s_.load(); }

 private:
  using Clock = std::chrono::steady_clock;
  double target() const;

  SimPlatform* platform_;
  SimRuntime* rt_;
  EmulatorOptions opts_;
  Clock::time_point wall_start_{};
  double sim_start_ = 0;
  std::atomic<bool> started_{false};
  std::atomic<std::int64_t> slices_{0};
  std::atomic<double> lag_wall_s_{0};
  std::mutex mu_;
  std::condition_variable cv_;
  bool woken_ = false;  // guarded by mu_
  bool stop_ = false;   // guarded by mu_
};

}  // namespace prima::sim
