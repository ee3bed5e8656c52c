// SimExecutor: runs the steps of one replica on the SimGrid platform.
//
// The reference model. A step goes through the pipeline stages in order. Per stage:
//   1. compute: one Exec on the stage's lead GPU (aggregate_stage_execs, default) whose flops
//      are compute_s x nominal speed x (lead speed / slowest speed of the stage), so a
//      throttled GPU anywhere in the stage slows it; or one Exec per GPU (the stage waits for
//      all). Analytic terms (intra-node all-reduces and sends, latency terms of flow-modelled
//      collectives, step overhead on stage 0) ride on the same Exec as seconds at the current
//      host speed, so they add their time without extra events.
//   2. TP all-reduce flows, when the TP group spans nodes or analytic collectives are off:
//      one flow per GPU to its ring neighbour of 2(p-1)/p x bytes x count.
//   3. PP send flow of send_bytes from this stage's lead GPU to the next stage's lead GPU,
//      when they are on different nodes or analytic collectives are off.
// Each stage runs one step at a time; steps wait in a FIFO per stage, so stage s of step k+1
// overlaps stage s+1 of step k (max_inflight() = pipeline depth). StepResult: start_s = when
// stage 0 began, end_s = when the last stage ended, stage_busy_s = time each stage spent on
// the step, flops = sum of stage flops x TP. A failed Exec or flow (host or link off) gives
// status unavailable naming the GPU or link; the step's other activities are awaited first.
//
// The speed-ups (SimSpeedups, chosen by choose_speedups: backends/sim/sim_strategy.h) give
// the same times with fewer SimGrid events: a stage with nothing but compute runs as a
// runtime timer instead of an Exec, and hands its step on to a free next stage at once; a
// flow no other flow can meet is costed analytically or timed as a lone flow; a step whose
// stages are all timers is timed entirely at launch.
//
// With a FaultInjector (set_fault_injector; none by default, and then nothing below costs a
// thing): transfer-level faults (retries, failures, unresponsive peers), the NVLink figures
// the analytic terms use and byte counts for the timeline: sim_executor_faults.h.
// check_health() probes the replica's GPUs and routes.
//
// Reading order (each header starts with its vocabulary):
//   sim_executor.h             this class: the step's life through the stages (reference)
//   sim_executor_state.h       the data the parts share: Replica, Stage, Step, FlowPath
//   sim_executor.cpp           launch, the stage FIFO, phases, finish
//   sim_executor_compute.h     StageCompute: the compute phase. Exec per stage (reference);
//                              timer stages, deferred ends, chained stages (speed-ups)
//   sim_executor_transfers.h   Transfers: analytic terms, ring and send flows (reference);
//                              exclusive links, lone flows, folded sends (speed-ups)
//   sim_executor_closed_form.h ClosedForm: steps timed at launch (speed-up)
//   sim_executor_faults.h      FaultHooks: transfer faults, NVLink figures, health probe
//
// Thread-safety: simulation loop only. Ownership: borrows the platform (must outlive the
// executor) and the fault injector (must outlive it too, or be unset); owns its step states. The
// executor must outlive the steps it launched.
#pragma once

#include <cstdint>
#include <functional>

#include "backends/sim/fault_injector.h"
#include "backends/sim/platform.h"
#include "backends/sim/sim_cost_fns.h"
#include "backends/sim/sim_executor_closed_form.h"
#include "backends/sim/sim_executor_compute.h"
#include "backends/sim/sim_executor_faults.h"
#include "backends/sim/sim_executor_state.h"
#include "backends/sim/sim_executor_transfers.h"
#include "backends/sim/sim_strategy.h"
#include "engine/plan/parallel_plan.h"
#include "engine/runtime.h"

namespace prima::sim {

class SimExecutor : public Executor {
 public:
  SimExecutor(SimPlatform* platform, Runtime* runtime, plan::ReplicaPlacement placement,
              SimCostFns costs, SimSpeedups speedups = unconditional_speedups());
  ~SimExecutor() override;
  SimExecutor(const SimExecutor&) = delete;
  SimExecutor& operator=(const SimExecutor&) = delete;

  void launch(const StepBatch& step, std::function<void(const StepResult&)> done) override;
  int max_inflight() const override { return static_cast<int>(rep_.stages.size()); }
  // done(ok) on the loop when every GPU of the replica is on and every link of its rings and
  // sends is up; done(unavailable naming the GPU or link, and the fault that downed it)
  // otherwise; with an active unresponsive peer among its GPUs, only after stall_s.
  void check_health(std::function<void(Status)> done) override;

  // Fault models (null = none, the default). Borrowed. The executor's speed-ups must be valid
  // under a fault timeline (choose_speedups; throws std::logic_error otherwise).
  void set_fault_injector(FaultInjector* injector);

  const plan::ReplicaPlacement& placement() const { return rep_.placement; }
  std::uint64_t activities_started() const { return rep_.activities_started; }
  // Closed-form sends (statistics for tests and benchmarks): steps that continued
  // event-driven after being timed at launch, and steps in flight timed at launch again.
  std::uint64_t materialized() const { return closed_form_.materialized(); }
  std::uint64_t promoted() const { return closed_form_.promoted(); }

 private:
  // The parts call the step's life back (below).
  friend class exec::StageCompute;
  friend class exec::Transfers;
  friend class exec::ClosedForm;
  friend class exec::FaultHooks;
  friend struct exec::Step;
  using Step = exec::Step;
  using Stage = exec::Stage;

  Step* acquire();
  void release(Step* st);
  // st arrives at its current stage: it starts there (the compute phase), or waits in the
  // stage's FIFO.
  void start_stage(Step* st);
  // The phase's activities all ended (or it failed): the next phase, or the stage's end.
  void phase_done(Step* st);
  // The step's current stage ended at end_s (now, or a deferred end in the past): the next
  // step of the FIFO starts there, st moves on to the next stage or finishes.
  void stage_done(Step* st, double end_s);
  void finish(Step* st);
  // Fails st's phase (reported on the loop, at this instant).
  void fail_now(Step* st, Status s);
  // Starts activity a of st's phase (an Exec on src, or a flow src -> dst over route).
  void track(Step* st, simgrid::s4u::ActivityPtr a, simgrid::s4u::Host* src,
             simgrid::s4u::Host* dst, const std::vector<simgrid::s4u::Link*>* route = nullptr,
             double bytes = 0);
  void on_end(Step* st, const simgrid::s4u::Activity& a, bool ok);
  // The phase's flows and Execs all ended: cleans up and moves on.
  void activities_done(Step* st);
  double now() const { return rep_.now(); }

  exec::Replica rep_;
  exec::StageCompute compute_;
  exec::Transfers transfers_;
  exec::ClosedForm closed_form_;
  exec::FaultHooks faults_;
  std::vector<Step*> free_steps_;
  std::uint64_t launches_ = 0;  // steps launched so far (Step::launch_seq)
  StepResult result_;           // finish()'s result, reused
  bool finishing_ = false;      // inside finish()'s done()
};

}  // namespace prima::sim
