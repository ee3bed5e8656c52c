#include "engine/metrics/report.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <fstream>

#include "engine/metrics/summary.h"

namespace prima::metrics {
namespace {

using OJson = nlohmann::ordered_json;

OJson summary_json(const Summary& s) {
  return OJson{{"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90}, {"p99", s.p99}, {"max", s.max}};
}

struct Latencies {
  std::vector<double> ttft, tpot, e2e, queue;
  std::int64_t met = 0, total = 0;
};

void add(Latencies& l, const RequestRecord& r, const SloBounds& slo) {
  ++l.total;
  if (r.outcome != Outcome::kCompleted) return;
  l.ttft.push_back(r.ttft_s());
  if (r.output_tokens > 1) l.tpot.push_back(r.tpot_s());
  l.e2e.push_back(r.e2e_s());
  l.queue.push_back(r.queue_s());
  if (meets_slo(r, slo)) ++l.met;
}

OJson latency_json(const Latencies& l) {
  return OJson{{"ttft", summary_json(summarize(l.ttft))},
               {"tpot", summary_json(summarize(l.tpot))},
               {"e2e", summary_json(summarize(l.e2e))},
               {"queue", summary_json(summarize(l.queue))}};
}

Status open_error(const std::string& path) {
  return unavailable(path + ": cannot write (does the directory exist and is it writable?)");
}

}  // namespace

bool meets_slo(const RequestRecord& r, const SloBounds& slo) {
  if (r.outcome != Outcome::kCompleted) return false;
  if (slo.ttft_s > 0 && r.ttft_s() > slo.ttft_s) return false;
  if (slo.tpot_s > 0 && r.output_tokens > 1 && r.tpot_s() > slo.tpot_s) return false;
  if (slo.e2e_s > 0 && r.e2e_s() > slo.e2e_s) return false;
  if (r.sla_s > 0 && r.ttft_s() > r.sla_s) return false;
  return true;
}

OJson build_report(const Recorder& rec, const ReportInputs& in) {
  Latencies all;
  Latencies by_class[kNumPriorities];
  for (const auto& r : rec.records()) {
    add(all, r, in.slo);
    add(by_class[static_cast<int>(r.priority)], r, in.slo);
  }
  const double T = in.simulated_seconds > 0 ? in.simulated_seconds : 1;
  const std::int64_t completed = rec.count(Outcome::kCompleted);
  OJson j;
  j["scenario"] = in.scenario;
  j["seed"] = in.seed;
  j["simulated_seconds"] = in.simulated_seconds;
  if (!in.fidelity.is_null()) j["fidelity"] = in.fidelity;
  j["requests"] = OJson{{"submitted", rec.submitted()},
                        {"completed", completed},
                        {"rejected", rec.count(Outcome::kRejected)},
                        {"failed", rec.count(Outcome::kFailed)}};
  j["latency_s"] = latency_json(all);
  j["throughput"] =
      OJson{{"requests_per_s", completed / T}, {"output_tokens_per_s", rec.output_tokens() / T}};
  OJson slo_bounds;
  if (in.slo.ttft_s > 0) slo_bounds["ttft_s"] = in.slo.ttft_s;
  if (in.slo.tpot_s > 0) slo_bounds["tpot_s"] = in.slo.tpot_s;
  if (in.slo.e2e_s > 0) slo_bounds["e2e_s"] = in.slo.e2e_s;
  j["slo"] = OJson{{"attainment", all.total ? double(all.met) / all.total : 0.0},
                   {"goodput_rps", all.met / T},
                   {"met", all.met},
                   {"bounds", slo_bounds}};
  const double gpu_time = double(in.gpus) * T;
  j["gpus"] = OJson{{"count", in.gpus},
                    {"utilization_mean", gpu_time > 0 ? rec.busy_gpu_seconds() / gpu_time : 0},
                    {"tflops_mean", gpu_time > 0 ? rec.flops() / gpu_time / 1e12 : 0},
                    {"memory_used_fraction_max", rec.memory_fraction_max()}};
  if (!in.gpu_labels.empty() && T > 0) {
    const auto& busy = rec.device_busy_seconds();
    OJson per_gpu = OJson::array();
    double lo = 1e300, hi = 0;
    for (const auto& g : in.gpu_labels) {
      const double b = static_cast<std::size_t>(g.device) < busy.size() ? busy[g.device] : 0.0;
      const double u = b / T;
      lo = std::min(lo, u);
      hi = std::max(hi, u);
      per_gpu.push_back(OJson{{"device", g.device},
                              {"node", g.node},
                              {"replica", g.replica},
                              {"stage", g.stage},
                              {"utilization", u}});
    }
    j["gpus"]["utilization_min"] = lo;
    j["gpus"]["utilization_max"] = hi;
    j["gpus"]["per_gpu"] = per_gpu;
  }
  OJson by_priority = OJson::object();
  for (int c = 0; c < kNumPriorities; ++c) {
    if (by_class[c].total == 0) continue;
    by_priority[priority_name(static_cast<Priority>(c))] =
        OJson{{"requests", by_class[c].total},
              {"latency_s", latency_json(by_class[c])},
              {"slo_attainment", double(by_class[c].met) / by_class[c].total}};
  }
  j["by_priority"] = by_priority;
  j["preemptions"] = rec.preemptions();
  for (auto it = in.extra.begin(); it != in.extra.end(); ++it) j[it.key()] = it.value();
  j["run"] =
      OJson{{"wall_seconds", in.wall_seconds},
            {"sim_speedup", in.wall_seconds > 0 ? in.simulated_seconds / in.wall_seconds : 0},
            {"simulated_requests_per_wall_s",
             in.wall_seconds > 0 ? rec.submitted() / in.wall_seconds : 0}};
  return j;
}

Status write_report_json(const OJson& report, const std::string& path) {
  std::ofstream out(path);
  if (!out) return open_error(path);
  out << report.dump(2) << "\n";
  return out ? ok_status() : open_error(path);
}

Status write_requests_csv(const Recorder& rec, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return open_error(path);
  std::fputs(
      "id,priority,replica,outcome,prompt_tokens,output_tokens,preemptions,arrival_s,"
      "first_scheduled_s,first_token_s,finish_s,ttft_s,tpot_s,e2e_s,queue_s,reason\n",
      f);
  for (const auto& r : rec.records()) {
    const bool done = r.outcome == Outcome::kCompleted;
    std::string reason = r.reason;
    for (char& c : reason)
      if (c == '"') c = '\'';
    std::fputs(fmt::format("{},{},{},{},{},{},{},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},"
                           "{:.6f},\"{}\"\n",
                           r.id, priority_name(r.priority), r.replica, outcome_name(r.outcome),
                           r.prompt_tokens, r.output_tokens, r.preemptions, r.arrival_s,
                           r.first_scheduled_s, r.first_token_s, r.finish_s,
                           done ? r.ttft_s() : 0.0, done ? r.tpot_s() : 0.0, done ? r.e2e_s() : 0.0,
                           r.first_scheduled_s >= 0 ? r.queue_s() : 0.0, reason)
                   .c_str(),
               f);
  }
  return std::fclose(f) == 0 ? ok_status() : open_error(path);
}

Status write_timeline_csv(const Recorder& rec, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return open_error(path);
  std::fputs(
      "t_s,arrivals,completions,rejections,failures,tokens_generated,running,waiting,"
      "replicas_up,replicas_loading,kv_usage,gpu_utilization,e2e_p50_s,e2e_p99_s",
      f);
  const auto& extra = rec.extra_columns();
  for (const auto& c : extra) std::fputs(("," + c).c_str(), f);
  std::fputs("\n", f);
  for (const auto& t : rec.timeline()) {
    std::string line = fmt::format(
        "{:.0f},{},{},{},{},{},{},{},{},{},{:.4f},{:.4f},{:.6f},{:.6f}", t.t_s, t.arrivals,
        t.completions, t.rejections, t.failures, t.tokens_generated, t.running, t.waiting,
        t.replicas_up, t.replicas_loading, t.kv_usage, t.gpu_utilization, t.e2e_p50_s, t.e2e_p99_s);
    for (std::size_t i = 0; i < extra.size(); ++i) {
      line += ',';
      if (i < t.extra.size()) line += t.extra[i];
    }
    line += '\n';
    std::fputs(line.c_str(), f);
  }
  return std::fclose(f) == 0 ? ok_status() : open_error(path);
}

}  // namespace prima::metrics
