// WallRuntime: a mutex-protected timer map and post queue; the loop thread takes one callback
// at a time (posted closures first, then the earliest due timer) and runs it unlocked.
#include "backends/wall/wall_runtime.h"

namespace prima {

WallRuntime::WallRuntime() : start_(Clock::now()) {}

Time WallRuntime::now() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

TimerId WallRuntime::at(Time t, std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  const TimerId id = next_id_++;
  timers_.emplace(std::make_pair(t, id), std::move(fn));
  when_.emplace(id, t);
  cv_.notify_one();
  return id;
}

void WallRuntime::cancel(TimerId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto w = when_.find(id);
  if (w == when_.end()) return;
  timers_.erase({w->second, id});
  when_.erase(w);
}

void WallRuntime::post(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  posted_.push_back(std::move(fn));
  cv_.notify_one();
}

void WallRuntime::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  cv_.notify_all();
}

std::uint64_t WallRuntime::callbacks_run() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ran_;
}

void WallRuntime::run() {
  run_until([] { return false; });
}

void WallRuntime::run_until(const std::function<bool()>& done) {
  while (!done()) {
    std::function<void()> fn;  // released after it runs, not when the next one is taken
    if (!next(&fn)) return;
    fn();
  }
}

bool WallRuntime::next(std::function<void()>* fn) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (stop_) {
      stop_ = false;
      return false;
    }
    if (!posted_.empty()) {
      *fn = std::move(posted_.front());
      posted_.pop_front();
      break;
    }
    if (!timers_.empty()) {
      auto it = timers_.begin();
      const Time due = it->first.first;
      if (due <= now()) {
        *fn = std::move(it->second);
        when_.erase(it->first.second);
        timers_.erase(it);
        break;
      }
      // An absolute deadline: a spurious wake-up does not push the timer later.
      cv_.wait_until(lock, start_ + std::chrono::duration_cast<Clock::duration>(
                                        std::chrono::duration<double>(due)));
    } else {
      cv_.wait(lock);
    }
  }
  ++ran_;
  return true;
}

}  // namespace prima
