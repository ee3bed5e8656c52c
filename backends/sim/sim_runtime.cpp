#include "backends/sim/sim_runtime.h"

#include <algorithm>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u/Engine.hpp>

namespace prima::sim {

SimRuntime::SimRuntime() : loop_thread_(std::this_thread::get_id()) {}

SimRuntime::~SimRuntime() {
  for (auto& [id, e] : timers_) e.timer->remove();
  timers_.clear();
}

Time SimRuntime::now() const {
  return simgrid::s4u::Engine::get_clock();
}

TimerId SimRuntime::at(Time t, std::function<void()> fn) {
  const TimerId id = next_id_++;
  t = std::max(t, now());
  auto* timer = simgrid::kernel::timer::Timer::set(t, [this, id] { fire(id); });
  timers_.emplace(id, Entry{timer, std::move(fn)});
  return id;
}

void SimRuntime::fire(TimerId id) {
  auto it = timers_.find(id);
  if (it == timers_.end()) return;
  std::function<void()> fn = std::move(it->second.fn);
  timers_.erase(it);  // SimGrid deletes the Timer itself once it has fired
  fn();
}

void SimRuntime::cancel(TimerId id) {
  auto it = timers_.find(id);
  if (it == timers_.end()) return;
  it->second.timer->remove();  // unlinks and deletes the timer
  timers_.erase(it);
}

void SimRuntime::post(std::function<void()> fn) {
  if (std::this_thread::get_id() == loop_thread_) {
    at(now(), std::move(fn));
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  posted_.push_back(std::move(fn));
}

int SimRuntime::drain_posted() {
  std::vector<std::function<void()>> batch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(posted_);
  }
  for (auto& fn : batch) at(now(), std::move(fn));
  return static_cast<int>(batch.size());
}

void SimRuntime::start_post_pump(double period_s) {
  stop_post_pump();
  pump_period_s_ = period_s;
  pump_timer_ = at(now() + period_s, [this] { pump(); });
}

void SimRuntime::stop_post_pump() {
  if (pump_timer_ != kNoTimer) cancel(pump_timer_);
  pump_timer_ = kNoTimer;
}

void SimRuntime::pump() {
  drain_posted();
  pump_timer_ = at(now() + pump_period_s_, [this] { pump(); });
}

}  // namespace prima::sim
