// Latency summaries: mean and percentiles (linear interpolation between closest ranks, as
// numpy's default). Pure functions.
#pragma once

#include <vector>

namespace prima::metrics {

struct Summary {
  std::size_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

// Percentile q in [0, 100] of sorted values.
double percentile_sorted(const std::vector<double>& sorted, double q);
// Sorts a copy and summarizes; all zeros when empty.
Summary summarize(std::vector<double> values);

}  // namespace prima::metrics
