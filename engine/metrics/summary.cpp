#include "engine/metrics/summary.h"

#include <algorithm>
#include <cmath>

namespace prima::metrics {

double percentile_sorted(const std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const double pos = q / 100.0 * double(v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  const double frac = pos - double(lo);
  return v[lo] + (v[hi] - v[lo]) * frac;
}

Summary summarize(std::vector<double> values) {
  Summary s;
  s.count = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double x : values) sum += x;
  s.mean = sum / double(values.size());
  s.p50 = percentile_sorted(values, 50);
  s.p90 = percentile_sorted(values, 90);
  s.p99 = percentile_sorted(values, 99);
  s.max = values.back();
  return s;
}

}  // namespace prima::metrics
