// Wall-clock Runtime for the bench's arrival loop (see wall_runtime.h).
#include "loadgen/wall_runtime.h"

namespace prima::loadgen {

Time WallRuntime::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

TimerId WallRuntime::at(Time t, std::function<void()> fn) {
  std::lock_guard<std::mutex> l(mu_);
  TimerId id = next_++;
  timers_.emplace(std::make_pair(t, id), std::move(fn));
  when_[id] = t;
  cv_.notify_one();
  return id;
}

void WallRuntime::cancel(TimerId id) {
  std::lock_guard<std::mutex> l(mu_);
  auto w = when_.find(id);
  if (w == when_.end()) return;
  timers_.erase({w->second, id});
  when_.erase(w);
}

void WallRuntime::post(std::function<void()> fn) {
  std::lock_guard<std::mutex> l(mu_);
  posted_.push_back(std::move(fn));
  cv_.notify_one();
}

void WallRuntime::run(const std::function<bool()>& finished) {
  while (!finished()) {
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> l(mu_);
      for (;;) {
        if (!posted_.empty()) {
          fn = std::move(posted_.front());
          posted_.pop_front();
          break;
        }
        if (!timers_.empty()) {
          auto it = timers_.begin();
          const Time due = it->first.first;
          if (due <= now()) {
            fn = std::move(it->second);
            when_.erase(it->first.second);
            timers_.erase(it);
            break;
          }
          cv_.wait_until(l, t0_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                      std::chrono::duration<double>(due)));
        } else {
          cv_.wait(l);
        }
      }
    }
    fn();
  }
}

}  // namespace prima::loadgen
