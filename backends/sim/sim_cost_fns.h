// SimCostFns: the costs a SimExecutor times steps with (a CostModel, or fixed costs in tests).
// Plain values; the functions are called on the simulation loop.
#pragma once

#include <functional>

#include "engine/perf/cost_model.h"
#include "engine/runtime.h"

namespace prima::sim {

struct SimCostFns {
  std::function<perf::StepCost(const BatchShape&)> step;
  // Optional: the same into *out, reusing its storage (used instead of step when set).
  std::function<void(const BatchShape&, perf::StepCost*)> step_into;
  // Ring all-reduce time of `bytes` over p ranks on links of (bw, lat); with bytes = 0 it is
  // the latency term only. Default: 2(p-1)/p x bytes / bw + 2(p-1) x lat.
  std::function<double(double bytes, int p, double bw_Bps, double lat_s)> allreduce_s;
  // Point-to-point send time; with bytes = 0 and lat = 0 the fixed per-send cost.
  // Default: bytes / bw + lat.
  std::function<double(double bytes, double bw_Bps, double lat_s)> send_s;
  // One all-to-all phase over p GPUs in nodes of gpus_per_node, each GPU exchanging `bytes`
  // (perf::CostModel::alltoall_time_s); with bytes = 0 its latency term. Default: the larger
  // of the NVLink share / nvlink bw and the node's NIC share / nic bw, plus the latency.
  std::function<double(double bytes, int p, int gpus_per_node, const plan::LinkSpec& nvlink,
                       const plan::LinkSpec& nic)>
      alltoall_s;
};
// Fills allreduce_s and send_s with the plain formulas (no efficiency factors).
SimCostFns default_cost_fns(std::function<perf::StepCost(const BatchShape&)> step);
// Wraps a CostModel (borrowed: it must outlive the executor). Defined in
// sim_cost_model_adapter.cpp.
SimCostFns cost_fns_from(const perf::CostModel& m);

}  // namespace prima::sim
