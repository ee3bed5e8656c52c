#include "backends/sim/sim_strategy.h"

namespace prima::sim {

SimSpeedups unconditional_speedups(const SimOptions& asked) {
  SimSpeedups s;
  s.aggregate_stage_execs = asked.aggregate_stage_execs;
  s.analytic_intra_node_collectives = asked.analytic_intra_node_collectives;
  s.exclusive_links_analytic = asked.exclusive_links_analytic;
  s.timer_stages = asked.timer_stages && s.aggregate_stage_execs;
  return s;
}

SimSpeedups choose_speedups(const SimOptions& asked, const SimScenarioFacts& facts) {
  SimSpeedups s = unconditional_speedups(asked);
  const bool gpus_steady = !facts.fault_timeline;
  const bool claims_stable = !facts.fabric();
  // Not a key of its own: on wherever valid (closed_form_pipeline off still chains).
  s.chain_stages = s.timer_stages && gpus_steady && claims_stable;
  s.closed_form_pipeline = asked.closed_form_pipeline && s.chain_stages;
  s.lone_flows = asked.lone_flows && !facts.fault_timeline && facts.lone_flow_platform;
  s.lone_flows_on_contention_links = claims_stable;
  s.closed_form_sends = asked.closed_form_sends && s.closed_form_pipeline && s.lone_flows;
  return s;
}

}  // namespace prima::sim
