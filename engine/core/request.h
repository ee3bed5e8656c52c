// Request and Sequence: the lifecycle of one inference request inside the engine.
//
// A Request is what a client asked for (immutable once submitted). A Sequence is the
// engine's running state for it: tokens computed into the KV cache, tokens generated, its KV
// blocks and the timestamps of its lifecycle (arrival, first scheduled, first token, finish).
// Owned by the ServingEngine; schedulers and replicas hold non-owning pointers. Not thread-safe:
// touched only on the engine's loop.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/types.h"

namespace prima {

// How the real backend picks each next token (ignored in simulation, which emits no ids).
struct SamplingParams {
  double temperature = 0;  // 0: greedy (argmax)
  int top_k = 0;           // 0: no top-k cut
  double top_p = 1.0;      // 1: no nucleus cut
  std::uint64_t seed = 0;  // per-request generator seed (same seed, same tokens)
  // Logit processing before the draw, in vLLM's order and semantics: logit_bias is added to
  // its tokens' logits; then repetition_penalty divides the positive (multiplies the
  // negative) logits of every token in the prompt or the output so far; frequency_penalty is
  // subtracted once per occurrence of a token in the output so far, presence_penalty once
  // per token present in it.
  double presence_penalty = 0;
  double frequency_penalty = 0;
  double repetition_penalty = 1.0;
  std::vector<std::pair<int, float>> logit_bias{};  // (token id, bias), ids in the vocabulary
  // Typical sampling (Meister et al. 2022, as Hugging Face's TypicalLogitsWarper): after the
  // penalties, only the tokens whose surprisal is closest to the distribution's entropy (at
  // the temperature), up to this much probability mass, can be drawn. 1: off.
  double typical_p = 1.0;
  // Min-p sampling (vLLM's min_p): after the penalties, the tokens whose probability at the
  // temperature is below min_p times the most likely token's cannot be drawn. 0: off.
  double min_p = 0;
  // Log-probabilities reported with each sampled token: -1 none; 0 the sampled token's;
  // n > 0 also the n most likely tokens (at most kMaxTopLogprobs). They are the model's raw
  // distribution (log-softmax of the logits before bias, penalties, temperature and cuts),
  // as vLLM reports by default.
  int logprobs = -1;
  // Log-probabilities of the prompt's own tokens (scoring): -1 none; n >= 0 each prompt
  // token's (from the second on: the first has no context) and the n most likely tokens at
  // its position, raw as above. A request that asks for them bypasses the prefix cache (every
  // prompt position must be computed).
  int prompt_logprobs = -1;

  static constexpr int kMaxTopLogprobs = 20;
  // Whether the draw depends on the tokens seen so far (the sampler needs them).
  bool penalized() const {
    return presence_penalty != 0 || frequency_penalty != 0 || repetition_penalty != 1.0;
  }
};

// A sampled token's log-probability and the most likely alternatives at its position
// (SamplingParams::logprobs), from the real backend's sampler to the front end.
struct TokenLogprobs {
  float logprob = 0;
  std::vector<std::pair<int, float>> top{};  // (id, log-probability), most likely first
};

struct Request {
  RequestId id = 0;
  Time arrival_s = 0;
  int prompt_tokens = 0;
  int max_output_tokens = 0;  // generation stops here (or earlier on a stop token)
  Priority priority = Priority::kNormal;
  double sla_s = 0;  // end-to-end latency target (0 = none)
  std::uint64_t user = 0;
  std::uint64_t prefix_group = 0;
  int prefix_tokens = 0;
  // Simulation of a Mooncake trace: the prompt's block hash ids, one per prefix_hash_tokens
  // tokens (RequestSpec::prefix_hashes); null otherwise.
  std::shared_ptr<const std::vector<std::uint64_t>> prefix_hashes;
  int prefix_hash_tokens = 0;
  std::vector<int> prompt_ids;  // real backend only; empty in simulation
  // What prefix-affinity routing groups by (0: nothing shared): the workload's prefix_group,
  // else a traced prompt's first block id (requests whose prompts start alike).
  std::uint64_t prefix_key() const {
    if (prefix_group != 0) return prefix_group;
    if (prefix_hashes && !prefix_hashes->empty())
      return ((*prefix_hashes)[0] * 0x9E3779B97F4A7C15ULL) | 1;
    return 0;
  }
  SamplingParams sampling;  // real backend only
  // Real backend: sampling one of these ids ends the sequence (end-of-generation tokens);
  // the id is kept as its last output token (Sequence::finish_reason = "stop").
  std::vector<int> stop_ids;
  // Real backend: before this many output tokens no stop id can be sampled (vLLM's
  // min_tokens; the executor masks their logits).
  int min_tokens = 0;
};

enum class Outcome { kPending, kCompleted, kRejected, kFailed };
const char* outcome_name(Outcome o);

struct alignas(64) Sequence {
  // What every scheduled step reads and writes (scheduling, completion, token events) is in
  // the first cache line: these 40 bytes, then the Request's leading fields (id, arrival,
  // prompt and output lengths). A step touches one line of each of its sequences
  // (tests/engine/core/request_test.cpp checks the layout).
  int num_computed = 0;    // tokens whose K/V are in the cache
  int num_generated = 0;   // tokens produced so far
  int step_tokens = 0;     // tokens it computes in the step it is in (while in_flight)
  int num_blocks = 0;      // blocks.size(), kept by the BlockManager (read by every step)
  bool in_flight = false;  // part of a step currently running on the devices
  bool running = false;    // admitted (holds KV blocks) rather than waiting
  bool scheduled = false;  // scheduled at least once (first_scheduled_s is set)
  Time last_token_s = -1;
  std::uint64_t run_rank = 0;  // the scheduler's admission order among running sequences
  Request req;
  std::vector<int> blocks;  // KV block table (physical block ids)
  Time first_scheduled_s = -1;
  Time first_token_s = -1;
  ReplicaId replica = -1;
  int preemptions = 0;
  int step_failures = 0;
  int reroutes = 0;  // moved off a failed replica (health checks), bounded by max_request_retries
  int swapped_blocks = 0;  // KV blocks held in host memory while swapped out (swap mode)
  // Speculative decoding: draft tokens verified in the step it is in (0: none), and the tokens
  // the last completed step produced (1, or 1 + the accepted drafts).
  int step_draft = 0;
  int step_new_tokens = 1;
  int kv_cached_blocks = 0;  // leading blocks registered in (or taken from) the prefix cache
  Outcome outcome = Outcome::kPending;
  std::string reason;  // why rejected or failed
  // Real backend: the ids generated so far (output_ids.size() == num_generated).
  std::vector<int> output_ids;
  // Why a completed sequence ended: "length" (max_output_tokens) or "stop" (a stop id, or a
  // stop string found by the front end, which ends it early through ServingEngine).
  std::string finish_reason;
  // Real backend, when req.sampling.logprobs >= 0: the last sampled token's log-probabilities
  // (read by the engine's token event; replaced at each token).
  TokenLogprobs last_logprobs;
  // Real backend, when req.sampling.prompt_logprobs >= 0: entry k is prompt token k + 1's
  // log-probabilities given the tokens before it (filled chunk by chunk during prefill).
  std::vector<TokenLogprobs> prompt_logprobs;

  Time finish_s = -1;

  // Tokens the sequence knows: the prompt plus what it generated.
  int known_tokens() const { return req.prompt_tokens + num_generated; }
  // Tokens still to compute before the next token can be sampled (>= 1 while unfinished).
  int remaining() const { return known_tokens() - num_computed; }
  bool decoding() const { return num_generated > 0 && remaining() == 1; }
  bool finished() const { return outcome != Outcome::kPending; }
  // Tokens the sequence will hold at most (prompt + all output): its KV footprint ceiling.
  int max_tokens() const { return req.prompt_tokens + req.max_output_tokens; }
  // Real backend: the token id at position `pos` (< known_tokens()) of the sequence.
  int token_at(int pos) const {
    return pos < req.prompt_tokens ? req.prompt_ids[pos] : output_ids[pos - req.prompt_tokens];
  }
};

}  // namespace prima
