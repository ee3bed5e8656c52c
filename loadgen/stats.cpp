// Benchmark statistics (see stats.h).
#include "loadgen/stats.h"

#include <algorithm>

namespace prima::loadgen {

bool meets_slo(const RequestResult& r, const SloBounds& slo, bool streamed) {
  if (!r.ok) return false;
  // Without a first token, E2E bounds TTFT from above.
  const double ttft = streamed && r.has_ttft() ? r.ttft_s() : r.e2e_s();
  if (slo.ttft_s > 0 && ttft > slo.ttft_s) return false;
  if (slo.tpot_s > 0 && streamed && r.has_tpot() && r.tpot_s() > slo.tpot_s) return false;
  if (slo.e2e_s > 0 && r.e2e_s() > slo.e2e_s) return false;
  if (r.plan.sla_s > 0 && ttft > r.plan.sla_s) return false;
  return true;
}

BenchStats compute_stats(const std::vector<RequestResult>& results, const SloBounds& slo,
                         bool streamed) {
  BenchStats s;
  s.submitted = results.size();
  std::vector<double> ttft, tpot, itl, e2e, sttft, se2e, squeue, diff, late;
  double first = 0, last = 0;
  bool any = false;
  for (const auto& r : results) {
    if (!any || r.send_s < first) first = r.send_s;
    if (!any || r.end_s > last) last = r.end_s;
    any = true;
    late.push_back(std::max(0.0, r.send_s - r.plan.due_s));
    if (!r.ok) {
      ++s.failed;
      continue;
    }
    ++s.completed;
    e2e.push_back(r.e2e_s());
    if (r.has_ttft()) ttft.push_back(r.ttft_s());
    if (r.has_tpot()) tpot.push_back(r.tpot_s());
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
    s.output_tokens += r.output_tokens;
    s.input_tokens += r.prompt_tokens;
    if (r.server.has_ttft) sttft.push_back(r.server.ttft_s);
    if (r.server.has_e2e) se2e.push_back(r.server.e2e_s);
    if (r.server.has_queue) squeue.push_back(r.server.queue_s);
    if (r.server.has_ttft && r.has_ttft()) diff.push_back(r.ttft_s() - r.server.ttft_s);
    if (meets_slo(r, slo, streamed)) ++s.slo_met;
  }
  s.duration_s = any ? last - first : 0;
  s.ttft = metrics::summarize(ttft);
  s.tpot = metrics::summarize(tpot);
  s.itl = metrics::summarize(itl);
  s.e2e = metrics::summarize(e2e);
  s.server_ttft = metrics::summarize(sttft);
  s.server_e2e = metrics::summarize(se2e);
  s.server_queue = metrics::summarize(squeue);
  s.ttft_client_minus_server = metrics::summarize(diff);
  s.send_lateness = metrics::summarize(late);
  if (s.duration_s > 0) {
    s.requests_per_s = static_cast<double>(s.completed) / s.duration_s;
    s.output_tokens_per_s = static_cast<double>(s.output_tokens) / s.duration_s;
    s.input_tokens_per_s = static_cast<double>(s.input_tokens) / s.duration_s;
    s.goodput_rps = static_cast<double>(s.slo_met) / s.duration_s;
  }
  s.slo_attainment =
      s.submitted ? static_cast<double>(s.slo_met) / static_cast<double>(s.submitted) : 0.0;
  if (!streamed && slo.tpot_s > 0) s.slo_unchecked.push_back("tpot_s");
  return s;
}

}  // namespace prima::loadgen
