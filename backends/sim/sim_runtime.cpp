#include "backends/sim/sim_runtime.h"

#include <algorithm>
#include <limits>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u/Engine.hpp>

#include "backends/sim/activity_dispatch.h"

namespace prima::sim {
namespace {

constexpr Time kInf = std::numeric_limits<Time>::infinity();
SimRuntime* g_current = nullptr;

Time simgrid_clock() {
  return simgrid::s4u::Engine::get_clock();
}

}  // namespace

SimRuntime::SimRuntime() : loop_thread_(std::this_thread::get_id()), now_(simgrid_clock()) {
  g_current = this;
}

SimRuntime::~SimRuntime() {
  disarm_sentinel();
  if (g_current == this) g_current = nullptr;
}

SimRuntime* SimRuntime::current() {
  return g_current;
}

Time SimRuntime::now() const {
  return driving_ ? simgrid_clock() : now_;
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
  e.fn = std::move(fn);
  ++pending_;
  t = std::max(t, now());
  e.t = t;
  heap_.push_back(Due{t, order_++, slot, e.generation});
  std::push_heap(heap_.begin(), heap_.end(), Later{});
  // While SimGrid drives, the sentinel must stay at the earliest own timer (unless SimGrid is
  // about to return to the loop, which fires it then).
  if (driving_ && !in_sentinel_ && (sentinel_ == nullptr || t < sentinel_t_) && sentinel_needed())
    arm_sentinel();
  return (TimerId{e.generation} << 32) | (TimerId{slot} + 1);
}

void SimRuntime::cancel(TimerId id) {
  const TimerId low = id & 0xffffffffu;
  if (low == 0 || low > slots_.size()) return;
  const auto slot = static_cast<std::uint32_t>(low - 1);
  Entry& e = slots_[slot];
  if (e.generation != static_cast<std::uint32_t>(id >> 32)) return;  // fired or cancelled
  release(slot);
  // A sentinel left for a cancelled timer would still move SimGrid's clock there.
  if (driving_ && !in_sentinel_ && sentinel_ != nullptr && e.t == sentinel_t_) {
    disarm_sentinel();
    arm_sentinel();
  }
}

Time SimRuntime::next_due() {
  while (!heap_.empty()) {
    const Due& d = heap_.front();
    const Entry& e = slots_[d.slot];
    if (e.generation == d.generation) return d.t;
    std::pop_heap(heap_.begin(), heap_.end(), Later{});
    heap_.pop_back();
  }
  return kInf;
}

void SimRuntime::fire_top() {
  const Due d = heap_.front();
  std::pop_heap(heap_.begin(), heap_.end(), Later{});
  heap_.pop_back();
  std::function<void()> fn = std::move(slots_[d.slot].fn);
  release(d.slot);
  if (!driving_) now_ = std::max(now_, d.t);
  fn();
}

void SimRuntime::release(std::uint32_t slot) {
  Entry& e = slots_[slot];
  e.fn = nullptr;
  ++e.generation;
  --pending_;
  free_slots_.push_back(slot);
}

bool SimRuntime::simgrid_idle() const {
  return ActivityDispatch::active() == 0 && simgrid::kernel::timer::Timer::next() < 0;
}

void SimRuntime::run() {
  loop(kInf);
}

void SimRuntime::run_until(Time t) {
  loop(t);
  if (simgrid_idle()) now_ = std::max(now_, t);
}

void SimRuntime::loop(Time until) {
  for (;;) {
    const Time next = next_due();
    if (simgrid_idle()) {
      if (next == kInf || next > until) return;
      fire_top();
      ++fired_directly_;
      continue;
    }
    // SimGrid has activities in flight: it drives until it is idle again (or until `until`).
    if (until < kInf && simgrid_clock() >= until) return;
    drive(until);
    // Engine::run() also returns when what is left in flight can never end (a GPU at speed 0)
    // and no own timer is pending: nothing more can happen.
    if (until == kInf && !simgrid_idle() && next_due() == kInf) return;
  }
}

void SimRuntime::drive(Time until) {
  driving_ = true;
  until_ = until;
  arm_sentinel();
  auto* engine = simgrid::s4u::Engine::get_instance();
  if (until == kInf) {
    engine->run();  // returns once SimGrid is idle (on_sentinel stops re-arming then)
  } else {
    // Never behind SimGrid's clock (its rounding of a sync can land an ulp past now_).
    engine->run_until(std::max(until, simgrid_clock()));
  }
  driving_ = false;
  disarm_sentinel();
  now_ = std::max(now_, simgrid_clock());
}

void SimRuntime::before_activity_start() {
  if (driving_) {
    // SimGrid goes on driving: own timers need their sentinel again (on_simgrid_idle() may
    // have removed it when the previous activity ended, in this same round).
    if (!in_sentinel_ && sentinel_ == nullptr) arm_sentinel();
    return;
  }
  if (simgrid_clock() >= now_) return;
  // Idle SimGrid (activities start only through ActivityDispatch): the round only moves its
  // clock.
  simgrid::s4u::Engine::get_instance()->run_until(now_);
}

void SimRuntime::arm_sentinel() {
  Time t = next_due();
  if (t == kInf) {
    disarm_sentinel();
    return;
  }
  // Not before SimGrid's clock (SimGrid rejects a date in its past): a timer set at now()
  // outside a drive can be an ulp behind it, SimGrid's rounding of a sync.
  t = std::max(t, simgrid_clock());
  if (sentinel_ != nullptr) {
    if (sentinel_t_ <= t) return;
    sentinel_->remove();
  }
  sentinel_t_ = t;
  sentinel_ = simgrid::kernel::timer::Timer::set(t, [this] { on_sentinel(); });
}

void SimRuntime::disarm_sentinel() {
  if (sentinel_ != nullptr) sentinel_->remove();  // unlinks and deletes the timer
  sentinel_ = nullptr;
}

void SimRuntime::on_sentinel() {
  sentinel_ = nullptr;  // SimGrid deletes a fired timer
  in_sentinel_ = true;
  const Time clock = simgrid_clock();
  while (next_due() <= clock) {
    fire_top();
    ++fired_in_simgrid_;
  }
  in_sentinel_ = false;
  if (sentinel_needed()) arm_sentinel();
}

bool SimRuntime::sentinel_needed() const {
  // Idle again under Engine::run(): no sentinel, so run() returns and the loop fires the next
  // timers itself. Under run_until() the sentinel must keep every timer in its place.
  return until_ < kInf || ActivityDispatch::active() > 0;
}

void SimRuntime::on_simgrid_idle() {
  if (driving_ && !in_sentinel_ && !sentinel_needed()) disarm_sentinel();
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
