// RealRuntime: a mutex-protected timer map and post queue; the loop thread takes one callback
// at a time (posted closures first, then the earliest due timer) and runs it unlocked.
#include "backends/real/real_runtime.h"

namespace prima::real {

RealRuntime::RealRuntime() : start_(Clock::now()) {}

Time RealRuntime::now() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

TimerId RealRuntime::at(Time t, std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  const TimerId id = next_id_++;
  timers_.emplace(std::make_pair(t, id), std::move(fn));
  when_.emplace(id, t);
  cv_.notify_one();
  return id;
}

void RealRuntime::cancel(TimerId id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto w = when_.find(id);
  if (w == when_.end()) return;
  timers_.erase({w->second, id});
  when_.erase(w);
}

void RealRuntime::post(std::function<void()> fn) {
  std::lock_guard<std::mutex> lock(mu_);
  posted_.push_back(std::move(fn));
  cv_.notify_one();
}

void RealRuntime::stop() {
  std::lock_guard<std::mutex> lock(mu_);
  stop_ = true;
  cv_.notify_all();
}

std::uint64_t RealRuntime::callbacks_run() const {
  std::lock_guard<std::mutex> lock(mu_);
  return ran_;
}

void RealRuntime::run() {
  run_until([] { return false; });
}

void RealRuntime::run_until(const std::function<bool()>& pred) {
  for (;;) {
    if (pred()) return;
    std::function<void()> fn;
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (;;) {
        if (stop_) {
          stop_ = false;
          return;
        }
        if (!posted_.empty()) {
          fn = std::move(posted_.front());
          posted_.pop_front();
          break;
        }
        if (!timers_.empty()) {
          const Time due = timers_.begin()->first.first;
          const Time t = now();
          if (due <= t) {
            auto it = timers_.begin();
            fn = std::move(it->second);
            when_.erase(it->first.second);
            timers_.erase(it);
            break;
          }
          cv_.wait_for(lock, std::chrono::duration<double>(due - t));
        } else {
          cv_.wait(lock);
        }
      }
      ++ran_;
    }
    fn();
  }
}

}  // namespace prima::real
