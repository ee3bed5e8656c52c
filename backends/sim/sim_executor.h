// SimExecutor: runs the steps of one replica on the SimGrid platform.
//
// A step goes through the pipeline stages in order. Per stage:
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
//   With timer_stages (and aggregate_stage_execs), a stage left with only its compute Exec
//   runs as a runtime timer on the lead GPU's current speed instead (re-timed on speed
//   changes, failed when the lead GPU goes off, like the Exec); it counts as an activity.
//   With exclusive_links_analytic, a flow of 2. or 3. whose route no other flow of the
//   simulation can use (SimPlatform link claims; links whose bandwidth or state never
//   changed) is costed as a lone flow on that route (latency x factor + bytes / (min
//   bandwidth x factor)) and rides on the compute Exec like the analytic terms above.
// Each stage runs one step at a time; steps wait in a FIFO per stage, so stage s of step k+1
// overlaps stage s+1 of step k (max_inflight() = pipeline depth). With closed_form_pipeline
// (SimSpeedups), a step whose stages would all run as timers is timed at launch from that
// FIFO rule and costs one runtime timer (its end) instead of one event per stage. StepResult:
// start_s = when stage 0 began, end_s = when the last stage ended, stage_busy_s = time each stage
// spent on the step, flops = sum of stage flops x TP. A failed Exec or flow (host or link off)
// gives status unavailable naming the GPU or link; the step's other activities are awaited first.
//
// With a FaultInjector (set_fault_injector; none by default, and then nothing below costs a
// thing): inter-node ring flows and sends consult transfer_attempts() (retries add time, a
// failure fails the step at the end of the stage's compute with status unavailable); a stage
// whose collectives involve an active unresponsive peer waits stall_s, or fails with
// deadline exceeded after the collective timeout; analytic intra-node collectives use the
// current bandwidth and adjusted latency of the stage's NVLink links (nvlink_saturation,
// link_degradation), and the latency term of inter-node all-reduces the NICs' adjusted
// latency (thermal retransmissions); flows and analytic transfers report their bytes
// (FaultInjector::count_bytes) for the timeline. check_health() probes the replica's GPUs
// and routes.
//
// Thread-safety: simulation loop only. Ownership: borrows the platform (must outlive the
// executor) and the fault injector (must outlive it too, or be unset); owns its step states. The
// executor must outlive the steps it launched.
#pragma once

#include <simgrid/forward.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "backends/sim/fault_injector.h"
#include "backends/sim/platform.h"
#include "backends/sim/sim_strategy.h"
#include "engine/perf/cost_model.h"
#include "engine/plan/parallel_plan.h"
#include "engine/runtime.h"

namespace prima::sim {

// The cost functions the executor needs (a CostModel, or fixed costs in tests).
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
};
// Fills allreduce_s and send_s with the plain formulas (no efficiency factors).
SimCostFns default_cost_fns(std::function<perf::StepCost(const BatchShape&)> step);
// Wraps a CostModel (borrowed: it must outlive the executor). Defined in
// sim_cost_model_adapter.cpp.
SimCostFns cost_fns_from(const perf::CostModel& m);

class SimExecutor : public Executor, private HostWatcher {
 public:
  SimExecutor(SimPlatform* platform, Runtime* runtime, plan::ReplicaPlacement placement,
              SimCostFns costs, SimSpeedups speedups = unconditional_speedups());
  ~SimExecutor() override;
  SimExecutor(const SimExecutor&) = delete;
  SimExecutor& operator=(const SimExecutor&) = delete;

  void launch(const StepPlan& step, std::function<void(const StepResult&)> done) override;
  int max_inflight() const override { return static_cast<int>(stages_.size()); }
  bool wants_seq_work() const override { return false; }  // steps are timed from their shape
  // done(ok) on the loop when every GPU of the replica is on and every link of its rings and
  // sends is up; done(unavailable naming the GPU or link, and the fault that downed it)
  // otherwise; with an active unresponsive peer among its GPUs, only after stall_s.
  void check_health(std::function<void(Status)> done) override;

  // Fault models (null = none, the default). Borrowed. The executor's speed-ups must be valid
  // under a fault timeline (choose_speedups; throws std::logic_error otherwise).
  void set_fault_injector(FaultInjector* injector);

  const plan::ReplicaPlacement& placement() const { return placement_; }
  std::uint64_t activities_started() const { return activities_started_; }
  // Closed-form sends (statistics for tests and benchmarks): steps that continued
  // event-driven after being timed at launch, and steps in flight timed at launch again.
  std::uint64_t materialized() const { return materialized_; }
  std::uint64_t promoted() const { return promoted_; }

 private:
  struct Step;
  struct FoldedSend;
  // A stream of flows between two GPUs that never overlap each other (one ring position of a
  // stage's TP all-reduce, or a stage's PP send), with what a lone flow on its route costs.
  struct FlowPath {
    int slot = -1;  // SimPlatform flow slot
    std::vector<simgrid::s4u::Link*> links;
    const LinkOccupancy::Route* occ = nullptr;  // links as the platform's LinkOccupancy knows them
    double latency_s = 0;                       // route latency x latency factor
    double rate_Bps = 0;                        // lone-flow rate: min bandwidth x bandwidth factor
  };
  struct Stage {
    int index = 0;
    std::vector<simgrid::s4u::Host*> hosts;  // TP ranks
    simgrid::s4u::Host* lead = nullptr;
    simgrid::s4u::Host* next_lead = nullptr;  // null for the last stage
    bool tp_intra_node = true;
    bool send_intra_node = true;
    bool ring_flows = false;     // TP all-reduce modelled by flows (ring paths below)
    bool send_flow = false;      // PP send modelled by a flow (send path below)
    bool ring_analytic = false;  // ... but every ring path is exclusive: costed analytically
    bool send_analytic = false;  // ... but the send path is exclusive: costed analytically
    std::vector<FlowPath> ring;  // flow i: hosts[i] -> hosts[(i + 1) % p]
    FlowPath send;
    bool busy = false;
    std::deque<Step*> waiting;
    // Timer stage (SimSpeedups::timer_stages): the step computing, its remaining flops as of
    // `since_s` at `rate` flop/s (the lead's current speed), and the pending timer.
    Step* timed = nullptr;
    double remaining_flops = 0;
    double rate = 0;
    double since_s = 0;
    TimerId timer = kNoTimer;
    // Deferred end (no timer armed): the timed step ends at deferred_end_s, but nothing
    // needs that instant as an event (see defer_end()). Never set on two adjacent stages.
    bool deferred = false;
    double deferred_end_s = 0;
    // Chained stages (SimSpeedups::chain_stages): the stage's last step left it at free_at_s
    // (possibly ahead of the clock); a step arriving earlier waits for free_timer.
    double free_at_s = 0;
    TimerId free_timer = kNoTimer;
    // The stage's GPUs as of the last speed or state change (host watchers keep it fresh):
    // the first GPU that is off, the lead's speed and the slowest speed.
    bool hosts_known = false;
    simgrid::s4u::Host* down = nullptr;
    double lead_speed = 0;
    double slowest_speed = 0;
  };
  void refresh_hosts(Stage& stage);
  void forget_hosts(simgrid::s4u::Host* h);
  // flows_follow: the stage's flows start at the timer's end (no deferral, no chaining).
  void start_timer(Stage& stage, Step* st, double flops, bool flows_follow = false);
  void arm_timer(Stage& stage);
  void on_timer(Stage& stage);
  // Deferred stage ends: a timer stage whose step would, at its end, only move into the
  // next stage's queue (the next stage is busy with a step whose end is an event, and no
  // step waits for this stage) arms no timer. The end is settled when it matters: when the
  // next stage frees (the step moves on then, as it would have from the queue), when a step
  // arrives for this stage, or when a GPU's speed or state changes (everything settles).
  // The step's stage time is the same (deferred_end_s - stage start); one SimGrid event
  // less per deferred stage.
  bool can_defer(const Stage& stage) const;
  // Ends a deferred stage whose end is past (as its timer would have), or arms its timer.
  void settle(Stage& stage);
  void settle_all();
  // Chained stages: whether st may leave `stage` now for the next stage (free, no waiters,
  // a timer stage for st's cost there); on_free starts a step that waited for free_at_s.
  bool can_chain(const Stage& stage, const Step* st) const;
  bool can_hand_on(const Stage& stage, const Step* st, double end_s) const;
  // Whether st would run on `stage` as a timer and chaining is on (no flows follow there).
  bool runs_as_timer(const Stage& stage, const Step* st) const;
  void on_free(Stage& stage);
  // The executor's time: the clock, or a stage end ahead of it while a chain is processed.
  double now() const { return virtual_now_ >= 0 ? virtual_now_ : runtime_->now(); }
  void on_host_speed_change(simgrid::s4u::Host* h) override;
  void on_host_state_change(simgrid::s4u::Host* h) override;
  FlowPath make_path(simgrid::s4u::Host* src, simgrid::s4u::Host* dst);
  // Re-decides ring_analytic / send_analytic when the platform's link claims changed.
  void refresh_exclusive();
  double ring_analytic_s(const Stage& stage, double bytes_per_flow) const;
  // With an injector: transfer-level faults of the stage's collectives, and the NVLink
  // bandwidth / adjusted latency the analytic terms use.
  TransferFaults stage_faults(const Stage& stage, const perf::StageCost& c);
  void nvlink_now(const std::vector<simgrid::s4u::Host*>& src,
                  const std::vector<simgrid::s4u::Host*>& dst, double* bw, double* lat) const;
  void count_analytic_bytes(const Step* st);

  // Closed-form pipeline (SimSpeedups::closed_form_pipeline; sim_executor_pipeline.cpp). A
  // step whose every stage runs as a timer (with closed_form_sends: or as a timer carrying
  // its folded PP send), launched while no step runs event-driven, gets every stage's start
  // and end at launch (FIFO per stage: start = max(arrival, the stage's free_at_s), end =
  // start + flops / lead speed, as the timers would give them) and one timer, at the last
  // stage's end, that finishes it.
  bool try_time_at_launch(Step* st);
  // Whether stages [from, end) of st can be planned (timers, or timers with a foldable send).
  // *folds (optional): set when a stage's send must fold.
  bool can_plan(const Step* st, std::size_t from, bool* folds = nullptr);
  // Plans stages [from, end) of x arriving at `arrival` against plan_free_ (each stage's free
  // time, updated), registering each folded send ahead (kept in planned_ for unplan()).
  // False when a send's links are not free for its whole interval.
  bool plan_stages(Step* x, std::size_t from, double arrival);
  // Plans stage's PP send of x folded into its timer from `start` (*flops: the compute's,
  // then the timer's): registers it when its links are free for its interval.
  bool plan_fold(Stage& stage, Step* x, const perf::StageCost& c, double start, double* flops);
  void unplan();  // unregisters the sends plan_stages registered since planned_ was cleared
  // x's planned stages [from, end) become its times; arms its finish timer.
  void commit_timed(Step* x, std::size_t from);
  // With closed_form_sends: every step timed at launch continues event-driven from where its
  // plan has it at `now` (in its stage's timer, or waiting for the stage), its later sends
  // unregistered (they decide at their stage's start, as event-driven sends do).
  void materialize(double now);
  // Fills inflight_ (rarely needed: materialize, try_promote).
  void in_flight_steps();
  // With closed_form_sends: when every step in flight is event-driven and at a point whose
  // future is a plan (computing in a timer, its send folded or none following; or waiting
  // for a stage), plans them all from there and times them at launch. False (nothing
  // changed) otherwise, or when a send of the plan finds its links taken.
  bool try_promote();
  // A folded send is converted (a SimGrid flow starts on its links): a step timed at launch
  // continues event-driven (materialize) unless the send ends within eps; then, if it is the
  // step's current stage's send, it unfolds.
  void on_fold_converted(FoldedSend* f, double now, double eps);
  void unregister_fold(Step* x, int stage);  // folds[stage], if registered
  void unregister_folds(Step* x);            // every registered fold of x
  // try_time_at_launch for a step none of whose stages sends by a flow: the closed-form
  // pipeline's plan, written into the stages directly (it cannot fail).
  void time_without_sends(Step* st);

  static const perf::StageCost& stage_cost(const Step* st, int s);
  // The seconds that ride on a stage's compute (step overhead on stage 0, analytic
  // collectives and sends, fault extras); fills st's analytic byte counts and fault.
  double stage_analytic_s(const Stage& stage, Step* st, const perf::StageCost& c);
  void start_stage(Step* st);
  void start_compute(Step* st);
  void start_allreduce(Step* st);
  void start_send(Step* st);
  void phase_done(Step* st);
  // The step's current stage ended at end_s (now, or a deferred end in the past).
  void stage_done(Step* st, double end_s);
  void finish(Step* st);
  void fail_now(Step* st, Status s);
  bool fail_if_down(Step* st, const std::vector<simgrid::s4u::Host*>& hosts,
                    const std::vector<const std::vector<simgrid::s4u::Link*>*>& paths);
  Step* acquire();
  void release(Step* st);
  void track(Step* st, simgrid::s4u::ActivityPtr a, simgrid::s4u::Host* src,
             simgrid::s4u::Host* dst, const std::vector<simgrid::s4u::Link*>* route = nullptr,
             double bytes = 0);
  void on_end(Step* st, const simgrid::s4u::Activity& a, bool ok);
  // The phase's flows and Execs all ended: cleans up and moves on.
  void activities_done(Step* st);
  // Lone flows (SimSpeedups::lone_flows; sim_executor_lone.cpp). start_flow starts one flow of
  // a phase: lone when its links are idle, else a SimGrid Comm (converting lone flows there).
  struct LoneSend;
  bool lone_flows() const { return speedups_.lone_flows; }
  // Folds the stage's PP send into its compute timer when its links are free for the whole
  // send (returns the timer's flops, or -1 when it does not fold).
  double fold_send(Stage& stage, Step* st, const perf::StageCost& c, double compute_flops);
  void unfold_send(FoldedSend* f, double now, double eps);
  void start_flow(Step* st, const FlowPath& path, simgrid::s4u::Host* src, simgrid::s4u::Host* dst,
                  double bytes);
  void on_lone_end(LoneSend* f);
  void convert_lone(LoneSend* f, double now, double eps);
  // A lone transfer on p whose latency phase ends (ended) at latency_end continues at `now` as
  // a SimGrid Comm of what it has left (link_occupancy.h).
  void continue_as_comm(Step* st, const FlowPath& p, simgrid::s4u::Host* src,
                        simgrid::s4u::Host* dst, double latency_end, double bytes, double now,
                        double eps);

  SimPlatform* platform_;
  Runtime* runtime_;
  plan::ReplicaPlacement placement_;
  SimCostFns costs_;
  SimSpeedups speedups_;
  plan::LinkSpec nvlink_;
  std::vector<Stage> stages_;
  std::vector<std::unique_ptr<Step>> all_steps_;
  std::vector<Step*> free_steps_;
  std::uint64_t activities_started_ = 0;
  std::uint64_t claims_seen_ = ~std::uint64_t{0};
  FaultInjector* injector_ = nullptr;
  double virtual_now_ = -1;        // >= 0 while a chained stage end is processed
  int event_driven_inflight_ = 0;  // launched steps not timed at launch, not yet finished
  std::uint64_t materialized_ = 0;
  std::uint64_t promoted_ = 0;
  std::uint64_t launches_ = 0;        // steps launched so far (Step::launch_seq)
  std::vector<Step*> inflight_;       // in_flight_steps(): launched, not finished, in launch order
  std::vector<double> plan_free_;     // plan_stages: each stage's free time
  std::vector<FoldedSend*> planned_;  // plan_stages: sends registered, for unplan()
  StepResult result_;                 // finish()'s result, reused
  bool finishing_ = false;            // inside finish()'s done()
};

}  // namespace prima::sim
