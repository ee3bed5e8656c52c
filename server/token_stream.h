// TokenStream: one request's tokens on their way from the engine's loop to the HTTP handler
// thread that answers it. The loop pushes tokens (their index and simulated/engine time) and
// then the end (outcome, reason, timings); the handler waits for what is new. A handler that
// waits for the end only (wait_end, non-streaming) is not woken by each token: one wake-up
// per request (the handler and the loop would otherwise contend for the mutex per token), and
// it sleeps on a futex word of its own rather than the condition variable (glibc marks a
// mutex re-taken after a condition wait as contended, which costs a futex wake-up syscall on
// every unlock).
//
// Thread-safety: every member is thread-safe (a mutex and a condition variable); push and
// finish are called on the engine's loop, wait on a handler thread. Shared (shared_ptr)
// between the EngineBridge and the handler; whoever holds it last frees it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/core/request.h"

namespace prima::server {

// One of the most likely tokens at an output position (log-probabilities).
struct TokenAlt {
  int id = 0;
  std::string piece;  // its bytes (may be part of a UTF-8 character)
  float logprob = 0;
};

struct StreamToken {
  int index = 0;         // 0-based position in the output
  int id = -1;           // token id (real backend); -1 in simulation
  double time_s = 0;     // engine time when it was produced
  std::string text;      // output text released with this token (may be empty: held back)
  std::string piece{};   // the token's own bytes ("" for control tokens; may split a character)
  bool special = false;  // an end-of-generation token
  // When the request asks for log-probabilities (SamplingParams::logprobs >= 0): the token's,
  // and the most likely tokens at its position, most likely first. Real backend: the model's
  // raw distribution; sim backend: synthetic (EngineBridge, docs/serving.md).
  bool has_logprob = false;
  float logprob = 0;
  std::vector<TokenAlt> top{};
  // On the first output token of a request that scores its prompt
  // (SamplingParams::prompt_logprobs >= 0): the prompt's tokens, index = position, each with
  // its log-probability given the tokens before it (the first has none: has_logprob false).
  std::vector<StreamToken> prompt{};
};

// How a request ended, with its engine-time timestamps (seconds; -1 when it never got there).
struct StreamEnd {
  Outcome outcome = Outcome::kPending;
  std::string reason;         // why rejected or failed
  std::string finish_reason;  // "length" or "stop" when completed
  int prompt_tokens = 0;
  int output_tokens = 0;
  std::string tail_text;       // output text still held back when the request ended
  std::uint64_t seed = 0;      // the sampling seed used (the request's, or one drawn for it)
  bool sampled = false;        // temperature > 0 (the seed mattered)
  bool stop_sequence = false;  // completed at a stop string (finish_reason "stop")
  double arrival_s = 0, first_scheduled_s = -1, first_token_s = -1, finish_s = -1;
  double ttft_s() const { return first_token_s >= 0 ? first_token_s - arrival_s : -1; }
  double e2e_s() const { return finish_s >= 0 ? finish_s - arrival_s : -1; }
  double queue_s() const { return first_scheduled_s >= 0 ? first_scheduled_s - arrival_s : -1; }
};

class TokenStream {
 public:
  // Engine loop.
  void push(StreamToken t);
  void finish(StreamEnd e);

  // Handler thread: moves the tokens not yet taken into *tokens (appended) and sets *end once
  // the request ended. Waits up to `timeout` for something new; false when nothing came.
  bool wait(std::vector<StreamToken>* tokens, std::optional<StreamEnd>* end,
            std::chrono::milliseconds timeout);
  // Waits until the request ended (collecting every token).
  StreamEnd wait_end(std::vector<StreamToken>* tokens);
  // The same, waiting at most `timeout`: nullopt when the request has not ended yet (the
  // tokens that came are collected either way).
  std::optional<StreamEnd> wait_end_for(std::vector<StreamToken>* tokens,
                                        std::chrono::milliseconds timeout);

 private:
  // Waits until finish() ran, at most `timeout`; true when it did.
  bool wait_end_word(std::chrono::milliseconds timeout);

  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<StreamToken> pending_;  // guarded by mu_
  std::optional<StreamEnd> end_;      // guarded by mu_
  bool end_taken_ = false;            // guarded by mu_
  bool token_waiter_ = false;         // guarded by mu_: wait() is waiting for tokens
  // The end for end-only waiters: 0 not ended, 1 ended, 2 not ended and a waiter sleeps on it.
  std::atomic<int> end_word_{0};
};

}  // namespace prima::server
