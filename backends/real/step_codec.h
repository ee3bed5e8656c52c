// StepInput: one engine step as the ranks execute it (token ids, positions, block tables,
// sampling parameters of each sequence), and its byte encoding for the leader -> worker
// broadcast. Built on the engine's loop by RealExecutor::launch (copies everything the
// devices need), then owned by the worker thread. Plain data; thread-compatible.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/core/request.h"
#include "engine/core/status.h"

namespace prima::real {

// kFinish: only on a replica relay (replica_relay.h): collect the oldest begun step.
enum class StepKind : std::uint8_t { kForward = 0, kPing = 1, kShutdown = 2, kFinish = 3 };

struct SeqInput {
  std::uint64_t request = 0;
  std::int64_t pos0 = 0;    // position of tokens[0]
  std::vector<int> tokens;  // the chunk's ids (positions pos0 .. pos0 + n - 1)
  std::vector<int> blocks;  // block table covering positions [0, pos0 + n)
  bool samples = false;     // a token is sampled after the chunk's last position
  SamplingParams sampling;
  // The tokens the penalties look at (filled only when sampling.penalized()): the prompt's
  // ids when repetition_penalty != 1, and the ids generated so far.
  std::vector<int> prompt_history{}, output_history{};
  // Prompt scoring (sampling.prompt_logprobs >= 0): the prompt ids that follow the chunk's
  // first score_ids.size() positions; the log-probability of score_ids[j] is read from the
  // logits at position pos0 + j.
  std::vector<int> score_ids{};
};

struct StepInput {
  std::uint64_t step_id = 0;
  StepKind kind = StepKind::kForward;
  std::vector<SeqInput> seqs;
  std::int64_t total_tokens() const;
  int sampled_rows() const;
  // Whether a sampling sequence asks for log-probabilities (the last stage sends them back).
  bool wants_logprobs() const;
  // The token rows (indices into the step's concatenated tokens) whose logits the last stage
  // computes, in order: per sequence its scoring rows (score_ids), then its sampling row.
  std::vector<std::int64_t> logit_rows() const;
  // Whether a sequence scores prompt tokens (SeqInput::score_ids).
  bool wants_prompt_logprobs() const;
};

std::vector<std::uint8_t> encode_step(const StepInput& s);
// Errors name the byte offset where the message is short or inconsistent.
Result<StepInput> decode_step(const std::vector<std::uint8_t>& bytes);

// What the last stage sampled for one step: an id per sequence (-1 where none), the
// log-probabilities per sequence when a sequence asks for them (else empty), and the scored
// prompt tokens' log-probabilities.
struct SampledTokens {
  std::vector<int> ids;
  std::vector<TokenLogprobs> logprobs;
  // Per sequence, the log-probabilities of its score_ids (empty when no sequence scores).
  std::vector<std::vector<TokenLogprobs>> prompt_logprobs;
};

// A replica leader's answer over a relay: the step's (or ping's) status and, when ok, what
// it sampled. The status keeps its code and message.
std::vector<std::uint8_t> encode_reply(const Status& st, const SampledTokens& t);
// Decoding errors (kInvalidArgument) name the byte offset; a decoded error status is returned
// as the Result's status.
Result<SampledTokens> decode_reply(const std::vector<std::uint8_t>& bytes);

}  // namespace prima::real
