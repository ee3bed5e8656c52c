// SimExecutor::Step: the state of one launched step (private to the SimExecutor sources:
// sim_executor.cpp and its sibling files). Thread-safety: simulation loop only. Owned by
// the executor (reused through its free list).
#pragma once

#include <memory>
#include <simgrid/s4u.hpp>

#include "backends/sim/activity_dispatch.h"
#include "backends/sim/link_occupancy.h"
#include "backends/sim/sim_executor.h"

namespace prima::sim {

// One flow of a step timed as a lone flow (SimSpeedups::lone_flows), while it stays alone.
struct SimExecutor::LoneSend final : LoneFlow {
  SimExecutor* ex = nullptr;
  Step* st = nullptr;
  const FlowPath* path = nullptr;
  simgrid::s4u::Host* src = nullptr;
  simgrid::s4u::Host* dst = nullptr;
  double t0 = 0;             // start (its latency phase begins)
  double bytes = 0;          // payload
  TimerId timer = kNoTimer;  // its end, while timed

  void convert(double now, double eps) override { ex->convert_lone(this, now, eps); }
  const OccupancyRoute* route = nullptr;  // path->occ when it started (what it is registered on)
  const OccupancyRoute& lone_route() const override { return *route; }
  double lone_start_s() const override { return t0; }
  double lone_end_s() const override { return end_s(); }
  // The lone flow's end: after its latency, the bytes at the route's rate (CM02's lone flow).
  double end_s() const { return (t0 + path->latency_s) + bytes / path->rate_Bps; }
};

// A stage's PP send folded into its compute timer (SimSpeedups::lone_flows): registered for
// [send_start_s, send_end_s), the stage's timer ending with the send. Event-driven stages
// register it when the stage starts; a step timed at launch with its sends
// (SimSpeedups::closed_form_sends) registers one per stage at launch.
struct SimExecutor::FoldedSend final : LoneFlow {
  SimExecutor* ex = nullptr;
  Step* st = nullptr;
  const FlowPath* path = nullptr;
  int stage = 0;             // the stage whose send this is
  double compute_flops = 0;  // the timer's flops without the send
  double send_start_s = 0;
  double bytes = 0;

  const OccupancyRoute* route = nullptr;  // path->occ when folded (what it is registered on)

  void convert(double now, double eps) override { ex->on_fold_converted(this, now, eps); }
  const OccupancyRoute& lone_route() const override { return *route; }
  double lone_start_s() const override { return send_start_s; }
  double lone_end_s() const override {
    return (send_start_s + path->latency_s) + bytes / path->rate_Bps;
  }
};

struct SimExecutor::Step final : CompletionTarget {
  enum class Phase { kCompute, kAllreduce, kSend };
  SimExecutor* ex = nullptr;
  std::uint64_t step_id = 0;
  perf::StepCost cost;
  std::function<void(const StepResult&)> done;
  int stage = 0;
  Phase phase = Phase::kCompute;
  int pending = 0;
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
  // Closed-form pipeline (SimSpeedups::closed_form_pipeline): every stage was timed at launch;
  // `timer` (pending until it fires) finishes the step at the end of its last stage. Each
  // stage's start, end and timer flops (the folded send's included) as planned.
  bool timed_at_launch = false;
  TimerId timer = kNoTimer;
  bool in_flight = false;        // launched, not finished
  std::uint64_t launch_seq = 0;  // launch order
  std::vector<double> t_start, t_end, t_flops;

  void on_activity_end(const simgrid::s4u::Activity& a, bool ok) override {
    ex->on_end(this, a, ok);
  }
};

}  // namespace prima::sim
