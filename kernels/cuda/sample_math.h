// The draw over sorted candidates that the host sampler (backends/real/sampler.cpp) and the
// device's sample_rows (sample.cu) share, so both make it in the same double arithmetic in the
// same order: candidates by descending logit with weights prob[i] = exp((l_i - l_0) / T), the
// nucleus cut where the cumulative weight reaches top_p of `total` (0: of the candidates' own
// weight), then the inverse CDF at u01 over what is kept. Header only (PRIMA_HD); no state.
#pragma once

#include "kernels/cuda/host_device.h"

namespace prima::cuda {

// The index in [0, k) of the candidate drawn (k >= 1).
PRIMA_HD int draw_sorted_index(const double* prob, int k, double top_p, double u01, double total) {
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += prob[i];
  if (top_p < 1.0) {
    const double norm = total > 0 ? total : sum;
    double cum = 0;
    int keep = k;
    for (int i = 0; i < k; ++i) {
      cum += prob[i] / norm;
      if (cum >= top_p) {
        keep = i + 1;
        break;
      }
    }
    k = keep;
    sum = 0;
    for (int i = 0; i < k; ++i) sum += prob[i];
  }
  const double u = u01 * sum;
  double cum = 0;
  for (int i = 0; i < k; ++i) {
    cum += prob[i];
    if (u < cum) return i;
  }
  return k - 1;
}

}  // namespace prima::cuda
