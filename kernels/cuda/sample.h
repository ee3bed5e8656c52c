// Token sampling on the device: a step's logit rows reduced to their tokens and
// log-probabilities where the logits are, so that only a few bytes per row cross to the host.
// The same logit processing and draw as the host's sample_row (backends/real/logit_processing.h,
// sampler.h), step for step: logit_bias, the repetition / frequency / presence penalties,
// typical sampling's cut, min-p,
// then greedy, plain temperature (inverse CDF in id order), top-k or top-p (descending logit,
// ascending id on ties, then the nucleus cut and the draw in that order), with the uniform draw
// given (the host's sampling_uniform of seed and position), and the raw log-probabilities (the
// log-sum-exp and the n most likely ids) of sampling and prompt-scoring rows. What a row cannot
// do here it leaves to the host (SampleOut::done = 0): a top-k above kSampleMaxCandidates, a top-p
// nucleus or a typical set that needs more candidates.
// Plain data and one entry point; stateless.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

namespace prima::cuda {

// The most log-probabilities a row reports (SamplingParams::kMaxTopLogprobs).
constexpr int kSampleMaxTop = 20;
// The most candidates a top-k or top-p draw sorts on the device (in shared memory); the host
// sampler grows a top-p candidate set 64, 256, 1,024, 4,096, ... and so does the device, to here.
constexpr int kSampleMaxCandidates = 4096;

enum SampleKind : std::int32_t { kSampleDraw = 0, kSampleScore = 1 };

// One logit row's work.
struct SampleRow {
  std::int32_t row = 0;  // the row of the logits matrix
  std::int32_t kind = kSampleDraw;
  std::int32_t target = 0;  // kSampleScore: the scored id (outside the vocabulary: -inf)
  std::int32_t n_top = -1;  // log-probabilities: -1 none, else the n most likely (<= 20)
  std::int32_t top_k = 0;   // 0: no top-k cut (the host sends 0 for top_k >= vocab)
  std::int32_t bias_begin = 0, bias_count = 0;  // logit_bias entries, in the request's order
  std::int32_t edit_begin = 0, edit_count = 0;  // penalty edits, one per distinct id
  float repetition = 1;  // the repetition penalty (as a float, as the host applies it)
  double temperature = 0, top_p = 1, min_p = 0, typical_p = 1;
  double u01 = 0;  // the draw's uniform in [0, 1)
};

struct SampleBias {
  std::int32_t id = 0;
  float bias = 0;
};

// The penalties of one id: the repetition penalty when `repeat` (the id is in the prompt or the
// output and the penalty is not 1), then `subtract` (frequency_penalty x its count in the
// output + presence_penalty, as a float; 0 for an id only in the prompt).
struct SampleEdit {
  std::int32_t id = 0;
  std::int32_t repeat = 0;
  float subtract = 0;
};

struct SampleOut {
  std::int32_t done = 0;    // 0: the host samples this row from its logits
  std::int32_t token = -1;  // kSampleDraw: the id drawn
  std::int32_t n_top = 0;   // entries of top_id / top_logprob filled
  float logprob = 0;        // the drawn (or scored) id's raw log-probability, when n_top >= 0 asked
  std::int32_t top_id[kSampleMaxTop];
  float top_logprob[kSampleMaxTop];
};

// out[b] = row rows[b] of `logits` (rows of vocab floats, not changed) sampled or scored, for b
// in [0, count), a block each. biases and edits hold every row's entries; work holds count x
// vocab floats (a row's processed logits) and scratch count x kSampleMaxCandidates doubles.
// Device pointers. cudaErrorInvalidValue for count <= 0 or vocab outside [1, 2^31).
cudaError_t sample_rows(const float* logits, std::int64_t vocab, const SampleRow* rows, int count,
                        const SampleBias* biases, const SampleEdit* edits, float* work,
                        double* scratch, SampleOut* out, cudaStream_t stream);

}  // namespace prima::cuda
