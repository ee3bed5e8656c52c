// Options of the sim backend (filled from the scenario's "sim" section and CLI flags).
// Plain values.
#pragma once

namespace prima::sim {

struct SimOptions {
  // One Exec per pipeline stage on its lead GPU (rate set by the slowest GPU of the stage)
  // instead of one per GPU: much faster, same timing while GPUs of a stage stay in step.
  bool aggregate_stage_execs = true;
  // TP all-reduces that stay inside one node are costed analytically (no flows) when the
  // replica is the only user of those NVLink links.
  bool analytic_intra_node_collectives = true;
  // Flows (inter-node TP all-reduces, PP sends) whose links no other flow of the simulation
  // can use are costed as a lone flow (same time as the flow: it gets the full bandwidth)
  // and ride on the compute Exec, with no flow activity. Exclusivity comes from the links
  // every executor claims (SimPlatform::claim_links); a link whose bandwidth or state changes
  // (drift, faults) stops being exclusive from then on, so faults on such links turn the
  // shortcut off there (a step already running keeps its analytic time). Components whose
  // flows are not claimed (SimFabric) turn it off everywhere.
  bool exclusive_links_analytic = true;
  // With aggregate_stage_execs: a stage whose work is all on its lead GPU (no flows left)
  // runs as a runtime timer instead of an Exec: flops / current speed of the lead GPU,
  // re-timed when its speed changes (pstate, speed profile) and failed when it goes off,
  // as the Exec would be. Same timing; far cheaper than an Exec. Assumes nothing else
  // computes on the lead GPU (replicas' GPUs are disjoint).
  bool timer_stages = true;
  // With timer_stages: a timer stage whose next stage is free and would run as a timer too
  // hands its step on at once, in the executor's own time (the next stage starts at this
  // stage's end, as it would from the end event), so a step crossing free stages costs one
  // SimGrid event instead of one per stage. Only valid while no GPU changes speed or state
  // and the executor's link claims do not change (no fault timeline, no autoscaler, no
  // fabric): the simulation turns it on then; off by default.
  bool chain_stages = false;
  // With chain_stages (same validity: GPU speeds and link claims never change): a step whose
  // every stage runs as a timer, launched while every step in flight was timed this way too,
  // gets all its stage starts and ends at launch (FIFO per stage: a stage starts when the step
  // arrives or when the stage's previous step left it, whichever is later; it ends flops /
  // lead speed later, as its timer would) and one runtime timer at its end. The same times as
  // the event-driven stages; one event per step even when the pipeline is full (where
  // chaining does not apply). Off by default; the simulation turns it on with chain_stages
  // unless the scenario's "sim": {"closed_form_pipeline": false}.
  bool closed_form_pipeline = false;
  // Lone flows (backends/sim/link_occupancy.h): a flow-modelled transfer (inter-node TP ring,
  // PP send) that starts while none of its links carries another flow is timed as a lone
  // flow (latency + bytes / route rate: what CM02 gives it) by a timer instead of a SimGrid
  // Comm, and turns into a SimGrid flow of what it has left the moment another flow starts
  // on one of its links. Stages followed by flows then compute as timers too (timer_stages),
  // and a PP send whose links are free for its whole interval rides on its stage's timer.
  // Same timing as the SimGrid flows up to rounding. Needs links with latency and no fault
  // timeline (a changing link needs the flow model throughout); off by default, the
  // simulation turns it on unless the scenario's "sim": {"lone_flows": false}.
  bool lone_flows = false;
  // With closed_form_pipeline and lone_flows: a step whose stages are timers except for PP
  // sends that can fold (their links free for the send's whole interval) is timed at launch
  // too, each send registered in LinkOccupancy for its planned interval from launch on
  // (event-driven stages register it when the stage starts). When a SimGrid flow later
  // starts on such a send's links, the replica's steps timed at launch continue
  // event-driven from where their plan has them (SimExecutor::materialize); the executor
  // plans them again at a later launch. The same times as event-driven stages while no
  // send meets another; when sends meet, the same sharing (SimGrid flows from the moment
  // they overlap), though which send is the lone one converted can differ. Off by default;
  // the simulation turns it on with closed_form_pipeline and lone_flows unless the
  // scenario's "sim": {"closed_form_sends": false}.
  bool closed_form_sends = false;
};

}  // namespace prima::sim
