#include "engine/core/virtual_runtime.h"

namespace prima {

TimerId VirtualRuntime::at(Time t, std::function<void()> fn) {
  if (t < now_) t = now_;
  TimerId id = next_id_++;
  timers_.emplace(std::make_pair(t, id), std::move(fn));
  when_[id] = t;
  return id;
}

void VirtualRuntime::cancel(TimerId id) {
  auto it = when_.find(id);
  if (it == when_.end()) return;
  timers_.erase({it->second, id});
  when_.erase(it);
}

bool VirtualRuntime::fire_next(Time limit) {
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

void VirtualRuntime::advance_to(Time t) {
  while (fire_next(t)) {
  }
  if (t > now_) now_ = t;
}

int VirtualRuntime::run_until_idle(int max_events) {
  int n = 0;
  while (n < max_events && fire_next(1e300)) ++n;
  return n;
}

}  // namespace prima
