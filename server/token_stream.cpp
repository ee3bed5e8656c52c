// TokenStream: the per-request queue between the engine's loop and an HTTP handler.
#include "server/token_stream.h"

namespace prima::server {

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
  cv_.notify_one();
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
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return end_.has_value(); });
  tokens->insert(tokens->end(), pending_.begin(), pending_.end());
  pending_.clear();
  end_taken_ = true;
  return *end_;
}

std::optional<StreamEnd> TokenStream::wait_end_for(std::vector<StreamToken>* tokens,
                                                   std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const bool ended = cv_.wait_for(lock, timeout, [this] { return end_.has_value(); });
  tokens->insert(tokens->end(), pending_.begin(), pending_.end());
  pending_.clear();
  if (!ended) return std::nullopt;
  end_taken_ = true;
  return end_;
}

}  // namespace prima::server
