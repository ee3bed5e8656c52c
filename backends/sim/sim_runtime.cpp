#include "backends/sim/sim_runtime.h"

#include <algorithm>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u/Engine.hpp>

namespace prima::sim {

SimRuntime::SimRuntime() : loop_thread_(std::this_thread::get_id()) {}

SimRuntime::~SimRuntime() {
  for (Entry& e : slots_)
    if (e.timer != nullptr) e.timer->remove();
  slots_.clear();
}

Time SimRuntime::now() const {
  return simgrid::s4u::Engine::get_clock();
}

// Ids: slot + 1 in the low 32 bits (never 0 = kNoTimer), the slot's generation above.
TimerId SimRuntime::at(Time t, std::function<void()> fn) {
  std::uint32_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    slot = static_cast<std::uint32_t>(slots_.size());
    slots_.emplace_back();
  }
  Entry& e = slots_[slot];
  const TimerId id = (TimerId{e.generation} << 32) | (TimerId{slot} + 1);
  t = std::max(t, now());
  e.timer = simgrid::kernel::timer::Timer::set(t, [this, id] { fire(id); });
  e.fn = std::move(fn);
  ++pending_;
  return id;
}

SimRuntime::Entry* SimRuntime::find(TimerId id) {
  const TimerId low = id & 0xffffffffu;
  if (low == 0 || low > slots_.size()) return nullptr;
  Entry& e = slots_[low - 1];
  if (e.timer == nullptr || e.generation != static_cast<std::uint32_t>(id >> 32)) return nullptr;
  return &e;
}

void SimRuntime::release(Entry* e) {
  e->timer = nullptr;
  e->fn = nullptr;
  ++e->generation;
  --pending_;
  free_slots_.push_back(static_cast<std::uint32_t>(e - slots_.data()));
}

void SimRuntime::fire(TimerId id) {
  Entry* e = find(id);
  if (e == nullptr) return;
  std::function<void()> fn = std::move(e->fn);
  release(e);  // SimGrid deletes the Timer itself once it has fired
  fn();
}

void SimRuntime::cancel(TimerId id) {
  Entry* e = find(id);
  if (e == nullptr) return;
  e->timer->remove();  // unlinks and deletes the timer
  release(e);
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
