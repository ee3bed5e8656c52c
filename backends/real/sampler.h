// Token sampling from one row of logits: greedy (argmax, lowest id on ties), temperature,
// top-k, top-p. The random draw of a step is a pure function of (seed, position), so a
// request's tokens do not depend on which other sequences share its batches; a request with
// seed 0 uses its request id as the seed. Stateless (scratch space passed in); thread-safe.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "engine/core/request.h"

namespace prima::real {

// Index of the largest logit (the lowest index among equal maxima).
int argmax(const float* logits, int vocab);

// The uniform draw in [0, 1) used at `position` (the position of the token being sampled).
double sampling_uniform(std::uint64_t seed, std::uint64_t request, std::int64_t position);

// Samples one id. temperature <= 0 or top_k == 1: argmax.
int sample_token(const float* logits, int vocab, const SamplingParams& p, std::uint64_t request,
                 std::int64_t position, std::vector<std::pair<float, int>>* scratch);

}  // namespace prima::real
