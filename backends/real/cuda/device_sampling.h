// What the device samples of a step (kernels/cuda/sample.h): the step's logit rows turned into
// the sampling kernel's row descriptions, and its answers into the rows RankRunner reads. A
// sampling row goes to the device when the device draws it as the host's sample_row would
// (every mode, with top-k up to kSampleMaxCandidates); every prompt-scoring
// row goes; none with PRIMA_DEVICE_SAMPLING=0 (every row's logits then go to the host). The
// draw's uniform is the host's sampling_uniform(seed, request, position), so a
// token does not depend on where it was drawn. Stateless.
#pragma once

#include <vector>

#include "backends/real/step_codec.h"
#include "backends/real/step_forward.h"
#include "engine/core/request.h"
#include "kernels/cuda/sample.h"

namespace prima::real::cuda {

// false when PRIMA_DEVICE_SAMPLING=0.
bool device_sampling_enabled();

// Whether sample_rows draws for `p` over `vocab` ids as sample_row does.
bool device_samples(const SamplingParams& p, int vocab);

struct SamplePlan {
  std::vector<::prima::cuda::SampleRow> rows;  // SampleRow::row: the index in logit_rows()
  std::vector<::prima::cuda::SampleBias> biases;
  std::vector<::prima::cuda::SampleEdit> edits;
};

// The logit rows of `s` (StepInput::logit_rows order) the device finishes, in that order.
SamplePlan plan_sampling(const StepInput& s, int vocab);

// A row's answer (`row` as planned) as RankRunner reads it.
DeviceRow device_row(const ::prima::cuda::SampleRow& row, const ::prima::cuda::SampleOut& out);

}  // namespace prima::real::cuda
