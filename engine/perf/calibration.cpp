// Calibration tables: parsing and lookup (calibration.h).
#include "engine/perf/calibration.h"

namespace prima::perf {
namespace {

Efficiency parse_efficiency(const config::JsonReader& r, Efficiency e) {
  e.gemm_compute = r.fraction("gemm_compute", e.gemm_compute);
  e.gemm_memory = r.fraction("gemm_memory", e.gemm_memory);
  e.attention_compute = r.fraction("attention_compute", e.attention_compute);
  e.attention_memory = r.fraction("attention_memory", e.attention_memory);
  e.elementwise_memory = r.fraction("elementwise_memory", e.elementwise_memory);
  e.allreduce_bandwidth = r.fraction("allreduce_bandwidth", e.allreduce_bandwidth);
  e.allreduce_latency_s = r.duration_s("allreduce_latency_s", e.allreduce_latency_s);
  e.p2p_latency_s = r.duration_s("p2p_latency_s", e.p2p_latency_s);
  e.step_overhead_s = r.duration_s("step_overhead_s", e.step_overhead_s);
  e.layer_overhead_s = r.duration_s("layer_overhead_s", e.layer_overhead_s);
  r.string("source", "");
  r.finish();
  for (double share : {e.gemm_compute, e.gemm_memory, e.attention_compute, e.attention_memory,
                       e.elementwise_memory, e.allreduce_bandwidth})
    if (share <= 0) r.fail_here("efficiency shares must be in (0, 1]; 0 would make time infinite");
  for (double s : {e.allreduce_latency_s, e.p2p_latency_s, e.step_overhead_s, e.layer_overhead_s})
    if (s < 0) r.fail_here("latencies and overheads must be >= 0");
  return e;
}

}  // namespace

const Efficiency& Calibration::for_gpu(const std::string& gpu) const {
  auto it = per_gpu.find(gpu);
  return it == per_gpu.end() ? defaults : it->second;
}

Calibration parse_calibration(const config::JsonReader& r) {
  Calibration c;
  if (auto d = r.optional_object("defaults")) c.defaults = parse_efficiency(*d, c.defaults);
  if (auto g = r.optional_object("gpus")) {
    for (auto it = g->json().begin(); it != g->json().end(); ++it)
      c.per_gpu[it.key()] = parse_efficiency(g->object(it.key()), c.defaults);
    g->finish();
  }
  r.string("source", "");
  // Written by `prima profile` next to the efficiencies: informational here (the GPU object
  // a topology may use, and the measurements the fit came from).
  r.consume("hardware");
  r.consume("profile");
  r.finish();
  return c;
}

Result<Calibration> load_calibration_file(const std::string& path) {
  auto j = config::read_json_file(path);
  if (!j.ok()) return j.status();
  Calibration c;
  Status st = config::to_status([&] {
    if (!j->is_object()) throw config::ConfigError(path + ": expected a JSON object");
    c = parse_calibration(config::JsonReader(*j, path));
  });
  if (!st.ok()) return st;
  return c;
}

}  // namespace prima::perf
