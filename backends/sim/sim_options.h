// SimOptions: the scenario's "sim" section as the user wrote it (docs/scenario-format.md,
// docs/sim-backend.md "Speed switches"). Each key's default is written here and nowhere else:
// read_sim_options keeps the value below for a key the section does not have.
//
// A key says what the user allows, not what runs: which speed-ups apply to a scenario is
// decided in one place, choose_speedups (backends/sim/sim_strategy.h), from these options and
// the scenario's facts (fault timeline, autoscaler, disaggregation, the platform). A key set to
// false always turns its speed-up off; a key left true (or set true) for a speed-up that is not
// valid in the scenario is silently not applied (the report is the same either way: that is
// what valid means). Plain values.
#pragma once

namespace prima::scenario {
struct Scenario;
}

namespace prima::sim {

struct SimOptions {
  // One Exec per pipeline stage on its lead GPU (rate set by the slowest GPU of the stage)
  // instead of one per GPU. Changes the model slightly (a GPU throttled mid-stage that is not
  // the lead slows only later stages).
  bool aggregate_stage_execs = true;
  // TP all-reduces and PP sends that stay inside one node are costed analytically on the
  // stage's Exec (no flows). Changes the model slightly (a replica shares no NVLink link).
  bool analytic_intra_node_collectives = true;
  // A flow on links no other flow of the simulation can use is costed as a lone flow on the
  // compute Exec (SimSpeedups::exclusive_links_analytic).
  bool exclusive_links_analytic = true;
  // A stage with nothing but compute is a runtime timer (SimSpeedups::timer_stages).
  bool timer_stages = true;
  // Steps whose stages are all timers are timed at launch (SimSpeedups::closed_form_pipeline).
  bool closed_form_pipeline = true;
  // Transfers that start on idle links are timers until another flow meets them
  // (SimSpeedups::lone_flows).
  bool lone_flows = true;
  // Steps whose PP sends fold into their timers are timed at launch too
  // (SimSpeedups::closed_form_sends).
  bool closed_form_sends = true;
};

// The scenario's "sim" section (JSON pointer /sim of sc.file); keys it lacks keep the defaults
// above. Throws config::ConfigError naming the file and key on an unknown key or a value that
// is not a boolean.
SimOptions read_sim_options(const scenario::Scenario& sc);

}  // namespace prima::sim
