#include "tests/support/manual_runtime.h"

namespace prima::testing {

TimerId ManualRuntime::at(Time t, std::function<void()> fn) {
  if (t < now_) t = now_;
  TimerId id = next_id_++;
  timers_.emplace(std::make_pair(t, id), std::move(fn));
  when_[id] = t;
  return id;
}

void ManualRuntime::cancel(TimerId id) {
  auto it = when_.find(id);
  if (it == when_.end()) return;
  timers_.erase({it->second, id});
  when_.erase(it);
}

bool ManualRuntime::fire_next(Time limit) {
  if (timers_.empty()) return false;
  auto it = timers_.begin();
  if (it->first.first > limit) return false;
  now_ = it->first.first;
  auto fn = std::move(it->second);
  when_.erase(it->first.second);
  timers_.erase(it);
  fn();
  return true;
}

void ManualRuntime::advance_to(Time t) {
  while (fire_next(t)) {
  }
  if (t > now_) now_ = t;
}

int ManualRuntime::run_until_idle(int max_events) {
  int n = 0;
  while (n < max_events && fire_next(1e300)) ++n;
  return n;
}

void ManualExecutor::launch(const StepBatch& step, std::function<void(const StepResult&)> done) {
  ++launched_;
  StepResult r;
  r.start_s = rt_->now();
  double dt = step_time_(step);
  r.end_s = r.start_s + dt;
  r.stage_busy_s = {dt};
  if (!fail_next_.ok()) {
    r.status = fail_next_;
    fail_next_ = Status();
  }
  rt_->at(r.end_s, [r, done = std::move(done)] { done(r); });
}

}  // namespace prima::testing
