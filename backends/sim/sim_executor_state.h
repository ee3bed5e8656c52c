// The data the SimExecutor's parts share (private to the executor's sources:
// sim_executor*.{h,cpp}). Read sim_executor.h first.
//
// Vocabulary:
//   Replica   what every part reads: the platform, the runtime and its clock, the replica's
//             placement and costs, the speed-ups that apply (SimSpeedups), the stages, every
//             Step made so far, and the parts themselves (compute, transfers, closed form,
//             faults) so that they can call each other.
//   Stage     one pipeline stage: its GPUs (TP ranks; the first is the lead), where its
//             transfers go (ring paths, the send path), its FIFO of steps, and the state
//             each part keeps per stage (grouped below by the part that owns it).
//   Step      one launched step (reused): its cost, its current stage and phase, its
//             activities (Execs, flows, lone flows) and what each part keeps per step.
//   FlowPath  a stream of flows between two GPUs that never overlap each other (one ring
//             position of a stage's TP all-reduce, or a stage's PP send).
//   phase     where a step is in its current stage: compute, then the TP all-reduce flows,
//             then the PP send flow (each only when it is modelled by flows).
//   activity  something a step waits for in a phase: an Exec, a SimGrid flow (Comm), a
//             lone flow or a stage timer; Step::pending counts them.
//   own time  Replica::now(): the clock, or a stage end ahead of it while chained stages
//             are handed on (Replica::virtual_now >= 0; sim_executor_compute.h).
//
// Thread-safety: simulation loop only. Ownership: the SimExecutor owns the Replica, the parts
// and every Step; a Step's LoneSends and FoldedSends are owned by the Step.
#pragma once

#include <simgrid/forward.h>

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <vector>

#include "backends/sim/activity_dispatch.h"
#include "backends/sim/fault_injector.h"
#include "backends/sim/link_occupancy.h"
#include "backends/sim/platform.h"
#include "backends/sim/sim_cost_fns.h"
#include "backends/sim/sim_strategy.h"
#include "engine/perf/cost_model.h"
#include "engine/plan/parallel_plan.h"
#include "engine/runtime.h"

namespace prima::sim {

class SimExecutor;

namespace exec {

class StageCompute;
class Transfers;
class ClosedForm;
class FaultHooks;
struct Step;

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
  // Layout (SimExecutor's constructor).
  int index = 0;
  std::vector<simgrid::s4u::Host*> hosts;  // the stage's GPUs: DP groups of tp_group TP ranks
  simgrid::s4u::Host* lead = nullptr;
  simgrid::s4u::Host* next_lead = nullptr;  // null for the last stage
  int tp_group = 1;
  bool tp_intra_node = true;  // every TP group inside one node
  bool ep_intra_node = true;  // the whole stage inside one node
  bool all_to_all = false;    // its GPUs exchange all-to-all (expert or context parallelism)
  bool send_intra_node = true;

  // Transfers (sim_executor_transfers.h): how the stage's transfers are modelled.
  bool ring_flows = false;     // TP all-reduce modelled by flows (ring paths below)
  bool send_flow = false;      // PP send modelled by a flow (send path below)
  bool ring_analytic = false;  // ... but every ring path is exclusive: costed analytically
  bool send_analytic = false;  // ... but the send path is exclusive: costed analytically
  std::vector<FlowPath> ring;  // flow i: hosts[i] -> the next host of its TP group's ring
  FlowPath send;
  // Expert-parallel all-to-all as flows (a stage spanning nodes, or analytic collectives off):
  // one flow per ordered pair of the stage's nodes (GPUs when it is inside one node), between
  // their first GPUs, carrying `pairs` GPU pairs' share of the exchange.
  bool a2a_flows = false;
  // ... but no other stage or replica claims their links (exclusive_links_analytic): costed
  // analytically, the phase lasting as long as its busiest link needs for what crosses it
  // (a2a_s_per_pair seconds per GPU pair's bytes, all paths' pairs summed per link) plus the
  // longest route latency.
  bool a2a_analytic = false;
  double a2a_s_per_pair = 0;
  double a2a_latency_s = 0;
  struct A2aPath {
    FlowPath path;
    simgrid::s4u::Host* src = nullptr;
    simgrid::s4u::Host* dst = nullptr;
    double pairs = 0;
  };
  std::vector<A2aPath> a2a;

  // The FIFO (SimExecutor): the stage serves one step at a time.
  bool busy = false;
  std::deque<Step*> waiting;
  // Chained stages (sim_executor_compute.h): the stage's last step left it at free_at_s
  // (possibly ahead of the clock); a step arriving earlier waits for free_timer.
  double free_at_s = 0;
  TimerId free_timer = kNoTimer;

  // Compute (sim_executor_compute.h). Timer stage: the step computing, its remaining flops
  // as of `since_s` at `rate` flop/s (the lead's current speed), and the pending timer.
  Step* timed = nullptr;
  double remaining_flops = 0;
  double rate = 0;
  double since_s = 0;
  TimerId timer = kNoTimer;
  // Deferred end (no timer armed): the timed step ends at deferred_end_s, but nothing
  // needs that instant as an event (StageCompute::can_defer). Never set on two adjacent
  // stages.
  bool deferred = false;
  double deferred_end_s = 0;
  // The stage's GPUs as of the last speed or state change (host watchers keep it fresh):
  // the first GPU that is off, the lead's speed and the slowest speed.
  bool hosts_known = false;
  simgrid::s4u::Host* down = nullptr;
  double lead_speed = 0;
  double slowest_speed = 0;
};

struct Replica {
  SimPlatform* platform = nullptr;
  Runtime* runtime = nullptr;
  plan::ReplicaPlacement placement;
  SimCostFns costs;
  SimSpeedups speedups;
  plan::LinkSpec nvlink;              // the node's NVLink figures
  FaultInjector* injector = nullptr;  // null without a fault timeline
  std::vector<Stage> stages;
  std::vector<std::unique_ptr<Step>> steps;  // every Step made (reused through a free list)
  std::uint64_t activities_started = 0;
  double virtual_now = -1;  // >= 0 while a chained stage end is processed

  // The parts (owned by the SimExecutor).
  SimExecutor* executor = nullptr;
  StageCompute* compute = nullptr;
  Transfers* transfers = nullptr;
  ClosedForm* closed_form = nullptr;
  FaultHooks* faults = nullptr;

  // The executor's time: the clock, or a stage end ahead of it while a chain is processed.
  double now() const { return virtual_now >= 0 ? virtual_now : runtime->now(); }
};

// Whether flows follow a stage's compute for a step of cost c: its TP all-reduce as ring
// flows, its expert all-to-alls as flows, its PP send as a flow (not costed analytically).
inline bool ring_flows_follow(const Stage& stage, const perf::StageCost& c) {
  return stage.ring_flows && !stage.ring_analytic && c.allreduces > 0 && c.allreduce_bytes > 0;
}
inline bool a2a_flows_follow(const Stage& stage, const perf::StageCost& c) {
  return stage.a2a_flows && !stage.a2a_analytic && c.alltoalls > 0 && c.alltoall_bytes > 0;
}
inline bool collective_flows_follow(const Stage& stage, const perf::StageCost& c) {
  return ring_flows_follow(stage, c) || a2a_flows_follow(stage, c);
}
inline bool send_flow_follows(const Stage& stage, const perf::StageCost& c) {
  return stage.send_flow && !stage.send_analytic && c.send_bytes > 0;
}

// One flow of a step timed as a lone flow (SimSpeedups::lone_flows), while it stays alone.
struct LoneSend final : LoneFlow {
  Replica* rep = nullptr;
  Step* st = nullptr;
  const FlowPath* path = nullptr;
  simgrid::s4u::Host* src = nullptr;
  simgrid::s4u::Host* dst = nullptr;
  double t0 = 0;             // start (its latency phase begins)
  double bytes = 0;          // payload
  TimerId timer = kNoTimer;  // its end, while timed

  void convert(double now, double eps) override;  // Transfers::convert_lone
  const OccupancyRoute* route = nullptr;  // path->occ when it started (what it is registered on)
  const OccupancyRoute& lone_route() const override { return *route; }
  double lone_start_s() const override { return t0; }
  double lone_end_s() const override { return end_s(); }
  // The lone flow's end: after its latency, the bytes at the route's rate (CM02's lone flow).
  double end_s() const { return (t0 + path->latency_s) + bytes / path->rate_Bps; }
};

// A stage's PP send folded into its compute timer (SimSpeedups::lone_flows): registered for
// [send_start_s, send_end_s), the stage's timer ending with the send. Event-driven stages
// register it when the stage starts (Transfers::fold_send); a step timed at launch with its
// sends (SimSpeedups::closed_form_sends) registers one per stage at launch
// (ClosedForm::plan_fold).
struct FoldedSend final : LoneFlow {
  Replica* rep = nullptr;
  Step* st = nullptr;
  const FlowPath* path = nullptr;
  int stage = 0;             // the stage whose send this is
  double compute_flops = 0;  // the timer's flops without the send
  double send_start_s = 0;
  double bytes = 0;

  const OccupancyRoute* route = nullptr;  // path->occ when folded (what it is registered on)

  void convert(double now, double eps) override;  // ClosedForm::on_fold_converted
  const OccupancyRoute& lone_route() const override { return *route; }
  double lone_start_s() const override { return send_start_s; }
  double lone_end_s() const override {
    return (send_start_s + path->latency_s) + bytes / path->rate_Bps;
  }
};

struct Step final : CompletionTarget {
  enum class Phase { kCompute, kAllreduce, kSend };
  SimExecutor* ex = nullptr;
  std::uint64_t step_id = 0;
  perf::StepCost cost;
  std::function<void(const StepResult&)> done;
  int stage = 0;
  Phase phase = Phase::kCompute;
  int pending = 0;  // activities of the phase not yet ended
  Status status;
  double start_s = 0;
  double stage_start_s = 0;
  std::vector<double> busy;
  std::vector<simgrid::s4u::ActivityPtr> acts;
  std::vector<simgrid::s4u::Host*> srcs;  // host of an Exec, source of a flow
  std::vector<simgrid::s4u::Host*> dsts;  // null for an Exec
  // With lone flows: each activity's route (null for an Exec), for LinkOccupancy; and the
  // phase's lone flows (lone[0 .. lone_used), reused from step to step).
  std::vector<const std::vector<simgrid::s4u::Link*>*> links;
  std::vector<std::unique_ptr<LoneSend>> lone;
  int lone_used = 0;
  // With lone flows: the current stage's send rides on its compute timer (folds[stage],
  // registered in LinkOccupancy while send_folded). One per stage (stable addresses: sized
  // once).
  bool send_folded = false;
  std::vector<FoldedSend> folds;
  // Bit s: folds[s] is in LinkOccupancy now; folds[s] rides on stage s's planned timer.
  std::uint32_t folds_registered = 0;
  std::uint32_t folds_planned = 0;
  // With a fault injector: a transfer-level failure applied when the compute phase ends, the
  // routes and bytes of the flows, and the bytes the analytic terms moved (for the timeline).
  Status fault;
  std::vector<const std::vector<simgrid::s4u::Link*>*> routes;
  std::vector<double> flow_bytes;
  double nvl_allreduce_bytes = 0;  // per GPU of the stage, intra-node analytic all-reduce
  double nvl_send_bytes = 0;       // intra-node analytic send
  double ring_analytic_bytes = 0;  // per ring path, exclusive-link analytic ring
  double send_analytic_bytes = 0;  // exclusive-link analytic send
  // Closed-form pipeline (sim_executor_closed_form.h): every stage was timed at launch;
  // `timer` (pending until it fires) finishes the step at the end of its last stage. Each
  // stage's start, end and timer flops (the folded send's included) as planned.
  bool timed_at_launch = false;
  TimerId timer = kNoTimer;
  bool in_flight = false;        // launched, not finished
  std::uint64_t launch_seq = 0;  // launch order
  std::vector<double> t_start, t_end, t_flops;

  void on_activity_end(const simgrid::s4u::Activity& a, bool ok) override;  // SimExecutor::on_end
};

// Stage s's cost in st (an empty one past the cost's stages).
inline const perf::StageCost& stage_cost(const Step* st, int s) {
  static const perf::StageCost kNone;
  return s < static_cast<int>(st->cost.stages.size()) ? st->cost.stages[s] : kNone;
}

}  // namespace exec
}  // namespace prima::sim
