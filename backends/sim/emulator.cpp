// Emulator: the wall-clock pacer of the sim backend (see emulator.h).
#include "backends/sim/emulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace prima::sim {

Status EmulatorOptions::validate() const {
  if (!(speed > 0) || !std::isfinite(speed))
    return invalid_argument(fmt::format("--speed: {} must be a positive number", speed));
  if (!(slice_wall_s > 0) || slice_wall_s > 1)
    return invalid_argument(
        fmt::format("emulator slice: {} s must be in (0, 1] seconds", slice_wall_s));
  return ok_status();
}

Emulator::Emulator(SimPlatform* platform, SimRuntime* rt, EmulatorOptions opts)
    : platform_(platform), rt_(rt), opts_(opts) {}

double Emulator::target() const {
  const double wall = std::chrono::duration<double>(Clock::now() - wall_start_).count();
  return sim_start_ + wall * opts_.speed;
}

double Emulator::sim_time_now() const {
  return started_.load() ? target() : 0.0;
}

void Emulator::run(const std::function<void()>& on_slice) {
  sim_start_ = rt_->now();
  wall_start_ = Clock::now();
  started_ = true;
  const auto slice = std::chrono::duration<double>(opts_.slice_wall_s);
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (stop_) break;
    }
    // 1. Every event up to where the wall clock is (a no-op timer there moves the clock even
    //    when nothing else is due, so arrivals below get the current time).
    const double t = target();
    if (t > rt_->now()) {
      rt_->at(t, [] {});
      platform_->run_until(t);
    }
    // 2. Arrivals and cancellations from other threads enter now, and run at once.
    if (rt_->drain_posted() > 0) platform_->run_until(rt_->now());
    ++slices_;
    lag_wall_s_ = std::max(0.0, (target() - rt_->now()) / opts_.speed);
    if (on_slice) on_slice();
    // 3. Sleep until the next slice, a post or stop.
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, slice, [this] { return woken_ || stop_; });
    woken_ = false;
  }
}

void Emulator::wake() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    woken_ = true;
  }
  cv_.notify_one();
}

void Emulator::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_one();
}

}  // namespace prima::sim
