// VirtualRuntime: a Runtime whose clock moves only when its owner says so, jumping from timer
// to timer. Timers fire in (time, insertion) order; a timer set in the past fires at now().
// It drains a workload driver at once (prima bench's schedule planner) and is the manual clock
// of the unit tests (tests/support/manual_runtime.h). Single-threaded: post() is for the
// owner's thread only.
#pragma once

#include <functional>
#include <map>
#include <utility>

#include "engine/runtime.h"

namespace prima {

class VirtualRuntime : public Runtime {
 public:
  Time now() const override { return now_; }
  TimerId at(Time t, std::function<void()> fn) override;
  void cancel(TimerId id) override;
  void post(std::function<void()> fn) override { at(now_, std::move(fn)); }

  // Fires the next timer (moving the clock to it); false when none is left.
  bool step() { return fire_next(1e300); }
  // Fires every timer due at or before t (in order), then sets the clock to t.
  void advance_to(Time t);
  // Fires timers until none is left or `max_events` fired; returns how many fired.
  int run_until_idle(int max_events = 1000000);
  std::size_t pending() const { return timers_.size(); }

 private:
  bool fire_next(Time limit);
  Time now_ = 0;
  TimerId next_id_ = 1;
  std::map<std::pair<Time, TimerId>, std::function<void()>> timers_;
  std::map<TimerId, Time> when_;
};

}  // namespace prima
