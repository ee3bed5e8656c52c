#include "engine/metrics/incidents.h"

#include <algorithm>
#include <cmath>

#include "engine/metrics/summary.h"

namespace prima::metrics {

namespace {

double p(std::vector<double>* v, double q) {
  if (v->empty()) return 0;
  std::sort(v->begin(), v->end());
  return percentile_sorted(*v, q);
}

}  // namespace

nlohmann::ordered_json incidents_json(const Recorder& rec, const std::vector<FaultWindow>& windows,
                                      double run_end_s) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const auto& w : windows) {
    const bool ongoing = !std::isfinite(w.end_s) || w.end_s > run_end_s;
    const double end = ongoing ? std::max(w.start_s, run_end_s) : w.end_s;
    std::vector<double> e2e_in, e2e_out, ttft_in, ttft_out;
    std::int64_t n_in = 0, n_out = 0, failed_in = 0;
    for (const auto& r : rec.records()) {
      const bool inside = r.arrival_s <= end && r.finish_s >= w.start_s;
      if (inside)
        ++n_in;
      else
        ++n_out;
      if (r.outcome == Outcome::kFailed && inside) ++failed_in;
      if (r.outcome != Outcome::kCompleted) continue;
      (inside ? e2e_in : e2e_out).push_back(r.e2e_s());
      (inside ? ttft_in : ttft_out).push_back(r.ttft_s());
    }
    out.push_back(nlohmann::ordered_json{{"fault", w.fault},
                                         {"type", w.type},
                                         {"target", w.target},
                                         {"start_s", w.start_s},
                                         {"end_s", end},
                                         {"ongoing", ongoing},
                                         {"requests_inside", n_in},
                                         {"requests_outside", n_out},
                                         {"failed_inside", failed_in},
                                         {"e2e_p99_inside_s", p(&e2e_in, 99)},
                                         {"e2e_p99_outside_s", p(&e2e_out, 99)},
                                         {"e2e_p50_inside_s", p(&e2e_in, 50)},
                                         {"e2e_p50_outside_s", p(&e2e_out, 50)},
                                         {"ttft_p99_inside_s", p(&ttft_in, 99)},
                                         {"ttft_p99_outside_s", p(&ttft_out, 99)}});
  }
  return out;
}

}  // namespace prima::metrics
