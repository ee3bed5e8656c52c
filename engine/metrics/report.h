// Report writer: report.json (schema in docs/report-format.md), requests.csv and
// timeline.csv from a Recorder. Everything outside the "run" key depends only on the
// scenario and seed; wall-clock figures live under "run". Pure functions over their inputs.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "engine/core/status.h"
#include "engine/metrics/recorder.h"

namespace prima::metrics {

struct SloBounds {
  double ttft_s = 0, tpot_s = 0, e2e_s = 0;  // 0 = not set
};

// Where a GPU sits, for the per-GPU section of the report.
struct GpuLabel {
  DeviceId device = 0;
  int node = 0;
  ReplicaId replica = 0;
  int stage = 0;
};

struct ReportInputs {
  std::string scenario;
  std::uint64_t seed = 0;
  double simulated_seconds = 0;
  SloBounds slo;
  int gpus = 0;
  double gpu_hbm_bytes = 0;
  double wall_seconds = 0;
  std::vector<GpuLabel> gpu_labels;  // the deployment's GPUs (per-GPU utilization)
  // How far the figures can be trusted: the cost model's calibration and its measured error
  // (perf::fidelity_to_json), written near the top of the report; null: not written.
  nlohmann::ordered_json fidelity;
  nlohmann::ordered_json extra;  // more sections (plan, kv, model...) merged at the top level
};

// Whether a completed request met the SLO (and its own TTFT "sla").
bool meets_slo(const RequestRecord& r, const SloBounds& slo);

nlohmann::ordered_json build_report(const Recorder& rec, const ReportInputs& in);
Status write_report_json(const nlohmann::ordered_json& report, const std::string& path);
Status write_requests_csv(const Recorder& rec, const std::string& path);
Status write_timeline_csv(const Recorder& rec, const std::string& path);

}  // namespace prima::metrics
