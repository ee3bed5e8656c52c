#include "backends/sim/sim_options.h"

#include "engine/config/json_reader.h"
#include "engine/scenario/scenario.h"

namespace prima::sim {

SimOptions read_sim_options(const scenario::Scenario& sc) {
  SimOptions o;
  config::JsonReader r(sc.sim, sc.file, "/sim");
  o.aggregate_stage_execs = r.boolean("aggregate_stage_execs", o.aggregate_stage_execs);
  o.analytic_intra_node_collectives =
      r.boolean("analytic_intra_node_collectives", o.analytic_intra_node_collectives);
  o.exclusive_links_analytic = r.boolean("exclusive_links_analytic", o.exclusive_links_analytic);
  o.timer_stages = r.boolean("timer_stages", o.timer_stages);
  o.closed_form_pipeline = r.boolean("closed_form_pipeline", o.closed_form_pipeline);
  o.lone_flows = r.boolean("lone_flows", o.lone_flows);
  o.closed_form_sends = r.boolean("closed_form_sends", o.closed_form_sends);
  r.finish();
  return o;
}

}  // namespace prima::sim
