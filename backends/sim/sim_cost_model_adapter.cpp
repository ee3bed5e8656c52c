// Adapts a perf::CostModel to SimCostFns. Kept in its own file so that programs (and tests)
// that never wrap a CostModel do not need its definitions at link time.
#include "backends/sim/sim_cost_fns.h"

namespace prima::sim {

SimCostFns cost_fns_from(const perf::CostModel& m) {
  SimCostFns f;
  const perf::CostModel* cm = &m;
  f.step = [cm](const BatchShape& b) { return cm->step(b); };
  f.step_into = [cm](const BatchShape& b, perf::StepCost* out) { cm->step(b, out); };
  f.allreduce_s = [cm](double bytes, int p, double bw, double lat) {
    return cm->allreduce_time_s(bytes, p, bw, lat);
  };
  f.send_s = [cm](double bytes, double bw, double lat) { return cm->send_time_s(bytes, bw, lat); };
  f.alltoall_s = [cm](double bytes, int p, int gpn, const plan::LinkSpec& nvlink,
                      const plan::LinkSpec& nic) {
    return cm->alltoall_time_s(bytes, p, gpn, nvlink, nic);
  };
  return f;
}

}  // namespace prima::sim
