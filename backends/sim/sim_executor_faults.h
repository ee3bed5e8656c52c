// FaultHooks: what a SimExecutor consults under a fault timeline (SimExecutor::
// set_fault_injector), and its health probe (private to the executor's sources; read
// sim_executor.h first). Without an injector only check_health runs; nothing else is called.
//
// Vocabulary:
//   transfer faults  stage_faults: the stage's collectives against the injector's active
//                    faults: an unresponsive peer stalls them (stall_s) or fails them after
//                    the collective timeout (deadline exceeded); inter-node ring flows and the
//                    send register memory with the NICs (transfer_attempts: retries add
//                    extra_s, a failure fails the step at the end of the stage's compute).
//                    Applied through the analytic terms (Transfers::stage_analytic_s).
//   NVLink now       nvlink_now: the current bandwidth and adjusted latency of NVLink halves
//                    (nvlink_saturation, link_degradation) for intra-node analytic terms.
//   byte counts      count_analytic_bytes: the bytes analytic terms moved, counted on their
//                    links for the timeline (flows count theirs as they end).
//   health probe     check_health: every GPU on and every link of the rings and sends up.
//
// Thread-safety: simulation loop only. Ownership: borrows the Replica (its owner's).
#pragma once

#include <functional>
#include <vector>

#include "backends/sim/sim_executor_state.h"

namespace prima::sim::exec {

class FaultHooks {
 public:
  explicit FaultHooks(Replica& rep) : rep_(rep) {}

  // With an injector: transfer-level faults of the stage's collectives.
  TransferFaults stage_faults(const Stage& stage, const perf::StageCost& c);
  // The slowest bandwidth and latency of the NVLink up halves of src and down halves of dst.
  void nvlink_now(const std::vector<simgrid::s4u::Host*>& src,
                  const std::vector<simgrid::s4u::Host*>& dst, double* bw, double* lat) const;
  // With an injector: st's analytic bytes at its current stage, onto their links.
  void count_analytic_bytes(const Step* st);
  // SimExecutor::check_health.
  void check_health(std::function<void(Status)> done);

 private:
  Replica& rep_;
};

}  // namespace prima::sim::exec
