// Guard: authentication and admission limits of the HTTP server.
//  - API key: when set, every API route (not the health and metrics routes) needs
//    `Authorization: Bearer KEY` (401 with an OpenAI error body otherwise); compared in
//    constant time.
//  - Admission: at most max_concurrent generation requests in the server at once (queued
//    in the engine or running); one more is refused with 429 and Retry-After (the bounded
//    queue). A Slot holds one place and gives it back when destroyed.
//  - Draining (SIGTERM): new generation requests get 503 with Retry-After.
// Thread-safety: every member is thread-safe (atomics; the options are immutable).
#pragma once

#include <httplib.h>

#include <atomic>
#include <memory>
#include <optional>
#include <string>

#include "server/api_error.h"

namespace prima::server {

struct GuardOptions {
  std::string api_key;       // empty: no authentication
  int max_concurrent = 256;  // generation requests in the server at once
};

class Guard {
 public:
  explicit Guard(GuardOptions opts) : opts_(std::move(opts)) {}

  // Whether `path` needs the API key (everything but health, readiness and metrics).
  static bool is_protected(const std::string& path);
  std::optional<ApiError> check_auth(const httplib::Request& req) const;

  // One place among max_concurrent; empty when full (answer 429) or draining (503): `why`
  // says which.
  using Slot = std::shared_ptr<void>;
  Slot admit(ApiError* why);
  int in_use() const { return in_use_.load(); }
  int capacity() const { return opts_.max_concurrent; }

  void start_draining() { draining_ = true; }
  bool draining() const { return draining_.load(); }

 private:
  GuardOptions opts_;
  std::atomic<int> in_use_{0};
  std::atomic<bool> draining_{false};
};

}  // namespace prima::server
