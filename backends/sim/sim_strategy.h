// The sim backend's speed-ups: which ones a simulation applies, decided in one place.
//
// The reference model (backends/sim/sim_executor.h) times every stage of a step with a SimGrid
// Exec and every transfer with a SimGrid flow. A speed-up below gives the same timing (to the
// precision stated) for less work, but only in the scenarios where its condition of validity
// holds. SimSpeedups is what an executor applies; it is made by
//   - choose_speedups(options, facts): a scenario's. Each speed-up's condition is stated
//     once, in choose_speedups, against the scenario's facts (SimScenarioFacts);
//   - unconditional_speedups(options): the ones valid in every scenario (an executor built
//     outside a scenario: tests, benchmarks; and the base choose_speedups starts from).
// Tests of one mechanism may switch a field on directly; they then vouch for its condition.
//
// The user's say (SimOptions, the scenario's "sim" section): a key set to false turns its
// speed-up off; a speed-up asked for (the default) whose condition does not hold is silently
// not applied. Plain values.
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
  // (SimPlatform::enable_lone_flows, before the executors are made): links with latency, and
  // no fault timeline (a changing link needs the flow model throughout).
  bool lone_flows = false;
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

// The speed-ups valid in every scenario, as `asked`; the others off.
SimSpeedups unconditional_speedups(const SimOptions& asked = {});

}  // namespace prima::sim
