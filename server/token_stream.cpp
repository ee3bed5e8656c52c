// TokenStream: the per-request queue between the engine's loop and an HTTP handler.
#include "server/token_stream.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <ctime>

namespace prima::server {
namespace {

int* futex_addr(std::atomic<int>* w) {
  static_assert(sizeof(std::atomic<int>) == sizeof(int));
  return reinterpret_cast<int*>(w);
}

// Sleeps while *w == expected, at most `timeout` (spurious returns are fine: callers loop).
void futex_wait(std::atomic<int>* w, int expected, std::chrono::nanoseconds timeout) {
  timespec ts{static_cast<time_t>(timeout.count() / 1000000000),
              static_cast<long>(timeout.count() % 1000000000)};
  syscall(SYS_futex, futex_addr(w), FUTEX_WAIT_PRIVATE, expected, &ts, nullptr, 0);
}

void futex_wake_all(std::atomic<int>* w) {
  syscall(SYS_futex, futex_addr(w), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}

}  // namespace

void TokenStream::push(StreamToken t) {
  bool wake = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_.push_back(t);
    wake = token_waiter_;
  }
  if (wake) cv_.notify_one();
}

void TokenStream::finish(StreamEnd e) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (end_) return;  // ends once
    end_ = std::move(e);
  }
  cv_.notify_one();                                            // a wait() (streaming) waiter
  if (end_word_.exchange(1) == 2) futex_wake_all(&end_word_);  // an end-only waiter
}

bool TokenStream::wait_end_word(std::chrono::milliseconds timeout) {
  const auto until = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    int v = end_word_.load();
    if (v == 1) return true;
    if (v == 0 && !end_word_.compare_exchange_strong(v, 2)) continue;  // ended meanwhile
    const auto left = until - std::chrono::steady_clock::now();
    if (left <= std::chrono::nanoseconds::zero()) return end_word_.load() == 1;
    futex_wait(&end_word_, 2, left);
  }
}

bool TokenStream::wait(std::vector<StreamToken>* tokens, std::optional<StreamEnd>* end,
                       std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  auto ready = [this] { return !pending_.empty() || (end_ && !end_taken_); };
  token_waiter_ = true;
  const bool got = cv_.wait_for(lock, timeout, ready);
  token_waiter_ = false;
  if (!got) return false;
  tokens->insert(tokens->end(), pending_.begin(), pending_.end());
  pending_.clear();
  if (end_ && !end_taken_) {
    *end = end_;
    end_taken_ = true;
  }
  return true;
}

StreamEnd TokenStream::wait_end(std::vector<StreamToken>* tokens) {
  while (!wait_end_word(std::chrono::seconds(3600))) {
  }
  std::lock_guard<std::mutex> lock(mu_);
  tokens->insert(tokens->end(), pending_.begin(), pending_.end());
  pending_.clear();
  end_taken_ = true;
  return *end_;
}

std::optional<StreamEnd> TokenStream::wait_end_for(std::vector<StreamToken>* tokens,
                                                   std::chrono::milliseconds timeout) {
  const bool ended = wait_end_word(timeout);
  std::lock_guard<std::mutex> lock(mu_);
  tokens->insert(tokens->end(), pending_.begin(), pending_.end());
  pending_.clear();
  if (!ended) return std::nullopt;
  end_taken_ = true;
  return end_;
}

}  // namespace prima::server
