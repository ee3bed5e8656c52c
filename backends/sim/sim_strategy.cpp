#include "backends/sim/sim_strategy.h"

namespace prima::sim {

SimSpeedups unconditional_speedups(const SimOptions& asked) {
  SimSpeedups s;
  s.aggregate_stage_execs = asked.aggregate_stage_execs;
  s.analytic_intra_node_collectives = asked.analytic_intra_node_collectives;
  s.exclusive_links_analytic = asked.exclusive_links_analytic;
  s.timer_stages = asked.timer_stages;
  return s;
}

}  // namespace prima::sim
