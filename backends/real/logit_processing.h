// Logit processing around the draw of one token (sampler.h draws): logit_bias and the
// repetition / frequency / presence penalties applied to a row of logits in place, in vLLM's
// order and semantics (SamplingParams), then typical sampling's cut (Hugging Face's, before
// sample_token's top-k / top-p); and the log-probabilities a request asks for, taken from the
// raw row (before any processing), as vLLM reports them by default.
//
// sample_row() is what a rank calls per sampling row: raw log-probabilities, then the
// processing, then sample_token(). Without bias, penalties or logprobs it is exactly
// sample_token() on the untouched row (greedy stays llama.cpp's argmax).
// Stateless apart from the scratch space passed in; thread-safe.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/core/request.h"

namespace prima::real {

// The tokens the penalties look at: the prompt's (repetition_penalty only) and the output's.
struct TokenHistory {
  const std::vector<int>* prompt = nullptr;  // null: none
  const std::vector<int>* output = nullptr;  // null: none
};

// Adds logit_bias, then applies the penalties, to `logits` (vocab entries) in place. Ids out
// of [0, vocab) are ignored (the front end checks them against the vocabulary).
void apply_logit_processing(float* logits, int vocab, const SamplingParams& p,
                            const TokenHistory& h, std::vector<int>* scratch);

// Typical sampling's cut (SamplingParams::typical_p < 1): the logits of the tokens outside
// the typical set at `temperature` become -infinity (at least one token stays).
void apply_typical(float* logits, int vocab, double temperature, double typical_p,
                   std::vector<std::pair<float, int>>* scratch);

// Min-p's cut (SamplingParams::min_p > 0, temperature > 0): the logits more than
// temperature * ln(1 / min_p) below the largest become -infinity.
void apply_min_p(float* logits, int vocab, double temperature, double min_p);

// log(sum(exp(logits))) in double, over the finite logits.
double log_sum_exp(const float* logits, int vocab);

// The `n` most likely ids (descending logit, ascending id on ties) with their
// log-probabilities logit - lse.
std::vector<std::pair<int, float>> top_logprobs(const float* logits, int vocab, int n, double lse,
                                                std::vector<std::pair<float, int>>* scratch);

struct SampleScratch {
  std::vector<std::pair<float, int>> pairs;
  std::vector<int> ids;
};

// Draws the next token from `logits` (modified in place when the request has a bias or
// penalties). With p.logprobs >= 0 fills *lp with the sampled token's raw log-probability and
// the p.logprobs most likely raw alternatives.
int sample_row(float* logits, int vocab, const SamplingParams& p, const TokenHistory& h,
               std::uint64_t request, std::int64_t position, SampleScratch* scratch,
               TokenLogprobs* lp);

}  // namespace prima::real
