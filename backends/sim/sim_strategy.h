// The sim backend's speed-ups: which ones a simulation applies, decided in one place.
//
// The reference model (backends/sim/sim_executor.h) times every stage of a step with a SimGrid
// Exec and every transfer with a SimGrid flow. A speed-up below gives the same timing (to the
// precision stated) for less work, but only in the scenarios where its condition of validity
// holds. SimSpeedups is what an executor applies; it is made by
//   - choose_speedups(options, facts): a scenario's. Each speed-up's condition of validity is
//     stated and checked once, there, against the scenario's facts (SimScenarioFacts):
//
//       speed-up                        valid when
//       aggregate_stage_execs,          always (model granularity, as asked)
//         analytic_intra_node_collectives
//       exclusive_links_analytic        always (exclusivity is checked per link at run time)
//       timer_stages                    with aggregate_stage_execs
//       chain_stages                    with timer_stages; GPUs steady and link claims stable
//       closed_form_pipeline            with chain_stages
//       lone_flows                      no fault timeline; the platform times lone flows
//       lone_flows_on_contention_links  link claims stable
//       closed_form_sends               with closed_form_pipeline and lone_flows
//
//     GPUs steady: no GPU changes speed or state (no fault timeline). Link claims stable: the
//     links each executor's flows may use (SimPlatform::claim_links) never change (no fabric:
//     SimFabric's transfers are unclaimed and mark every link shared; it exists with a fault
//     timeline, an autoscaler, which also adds and removes executors, or disaggregation);
//   - unconditional_speedups(options): the ones valid in every scenario (an executor built
//     outside a scenario: tests, benchmarks; and the base choose_speedups starts from).
// Tests of one mechanism may switch a field on directly; they then vouch for its condition.
// The executor checks two preconditions where they are cheap to check: lone_flows needs the
// platform's link occupancy on, and a fault injector refuses chained stages and lone flows.
//
// The user's say (SimOptions, the scenario's "sim" section): a key set to false turns its
// speed-up off; a speed-up asked for (the default) whose condition does not hold is silently
// not applied (never an error: the report is the same either way). Plain values.
#pragma once

#include "backends/sim/sim_options.h"

namespace prima::sim {

struct SimSpeedups {
  // The model's granularity, as asked (SimOptions; valid everywhere).
  bool aggregate_stage_execs = false;
  bool analytic_intra_node_collectives = false;
  // Flows (inter-node TP all-reduces, PP sends) whose links no other flow of the simulation
  // can use are costed as a lone flow (same time as the flow: it gets the full bandwidth)
  // and ride on the compute Exec, with no flow activity. Exclusivity comes from the links
  // every executor claims (SimPlatform::claim_links) and is checked at run time: a link whose
  // bandwidth or state changes (drift, faults) stops being exclusive from then on, and
  // components whose flows are not claimed (SimFabric) turn it off everywhere. Valid always.
  bool exclusive_links_analytic = false;
  // With aggregate_stage_execs: a stage whose work is all on its lead GPU (no flows left)
  // runs as a runtime timer instead of an Exec: flops / current speed of the lead GPU,
  // re-timed when its speed changes (pstate, speed profile) and failed when it goes off,
  // as the Exec would be. Same timing; far cheaper than an Exec. Assumes nothing else
  // computes on the lead GPU (replicas' GPUs are disjoint). Valid always.
  bool timer_stages = false;
  // With timer_stages: a timer stage whose next stage is free and would run as a timer too
  // hands its step on at once, in the executor's own time (the next stage starts at this
  // stage's end, as it would from the end event), so a step crossing free stages costs one
  // SimGrid event instead of one per stage. Valid while no GPU changes speed or state and the
  // executors' link claims do not change.
  bool chain_stages = false;
  // With chain_stages (same validity): a step whose every stage runs as a timer, launched
  // while every step in flight was timed this way too, gets all its stage starts and ends at
  // launch (FIFO per stage: a stage starts when the step arrives or when the stage's previous
  // step left it, whichever is later; it ends flops / lead speed later, as its timer would)
  // and one runtime timer at its end. The same times as the event-driven stages; one event
  // per step even when the pipeline is full (where chaining does not apply).
  bool closed_form_pipeline = false;
  // Lone flows (backends/sim/link_occupancy.h): a flow-modelled transfer (inter-node TP ring,
  // PP send) that starts while none of its links carries another flow is timed as a lone
  // flow (latency + bytes / route rate: what CM02 gives it) by a timer instead of a SimGrid
  // Comm, and turns into a SimGrid flow of what it has left the moment another flow starts
  // on one of its links. Stages followed by flows then compute as timers too (timer_stages),
  // and a PP send whose links are free for its whole interval rides on its stage's timer.
  // Same timing as the SimGrid flows up to rounding. Needs the platform's link occupancy
  // (SimPlatform::enable_lone_flows, before the executors are made; a platform whose links
  // have no latency cannot time lone flows as CM02 does), and no fault timeline (a changing
  // link needs the flow model throughout).
  bool lone_flows = false;
  // With stable link claims: a lone flow is registered and checked only on its route's links
  // where another flow can appear (SimPlatform::contention_links): a link only its own flow
  // path claims carries no other flow, and of the links claimed by the same set of paths one
  // stands for all. Otherwise on every link of its route.
  bool lone_flows_on_contention_links = false;
  // With closed_form_pipeline and lone_flows: a step whose stages are timers except for PP
  // sends that can fold (their links free for the send's whole interval) is timed at launch
  // too, each send registered in LinkOccupancy for its planned interval from launch on
  // (event-driven stages register it when the stage starts). When a SimGrid flow later
  // starts on such a send's links, the replica's steps timed at launch continue
  // event-driven from where their plan has them (materialize); the executor plans them again
  // at a later launch. The same times as event-driven stages while no send meets another;
  // when sends meet, the same sharing (SimGrid flows from the moment they overlap), though
  // which send is the lone one converted can differ.
  bool closed_form_sends = false;
};

// What choose_speedups needs to know about a scenario.
struct SimScenarioFacts {
  bool fault_timeline = false;  // "faults": GPUs and links change speed and state
  bool autoscaler = false;      // replicas (executors) start and stop; weights load over a fabric
  bool disaggregation = false;  // prefill -> decode KV hand-offs over a fabric
  // The platform can time a lone flow as CM02 does (SimPlatform::supports_lone_flows).
  bool lone_flow_platform = false;
  // Whether the scenario gets a SimFabric: a policy moves bytes outside the executors
  // (weight loads after failover or scale-up, KV hand-offs).
  bool fabric() const { return fault_timeline || autoscaler || disaggregation; }
};

// The speed-ups a scenario with `facts` applies: those `asked` whose condition holds.
SimSpeedups choose_speedups(const SimOptions& asked, const SimScenarioFacts& facts);

// The speed-ups valid in every scenario, as `asked`; the others off.
SimSpeedups unconditional_speedups(const SimOptions& asked = {});

}  // namespace prima::sim
