// choose_speedups (backends/sim/sim_strategy.h): each speed-up applies where its condition of
// validity holds and the user did not turn it off; the ones valid everywhere are as asked.
#include "backends/sim/sim_strategy.h"

#include <gtest/gtest.h>

namespace prima::sim {
namespace {

SimScenarioFacts plain() {
  SimScenarioFacts f;
  f.lone_flow_platform = true;
  return f;
}

TEST(SimStrategy, EverySpeedupOnInAPlainScenario) {
  const SimSpeedups s = choose_speedups(SimOptions{}, plain());
  EXPECT_TRUE(s.aggregate_stage_execs);
  EXPECT_TRUE(s.analytic_intra_node_collectives);
  EXPECT_TRUE(s.exclusive_links_analytic);
  EXPECT_TRUE(s.timer_stages);
  EXPECT_TRUE(s.chain_stages);
  EXPECT_TRUE(s.closed_form_pipeline);
  EXPECT_TRUE(s.lone_flows);
  EXPECT_TRUE(s.lone_flows_on_contention_links);
  EXPECT_TRUE(s.closed_form_sends);
}

TEST(SimStrategy, FaultTimelineKeepsOnlyTheUnconditionalOnes) {
  SimScenarioFacts f = plain();
  f.fault_timeline = true;
  EXPECT_TRUE(f.fabric());
  const SimSpeedups s = choose_speedups(SimOptions{}, f);
  const SimSpeedups u = unconditional_speedups();
  EXPECT_TRUE(s.timer_stages && s.exclusive_links_analytic);
  EXPECT_EQ(s.chain_stages, u.chain_stages);
  EXPECT_FALSE(s.chain_stages || s.closed_form_pipeline || s.lone_flows ||
               s.lone_flows_on_contention_links || s.closed_form_sends);
}

TEST(SimStrategy, FabricStopsChainingButNotLoneFlows) {
  for (int which = 0; which < 2; ++which) {
    SimScenarioFacts f = plain();
    (which == 0 ? f.autoscaler : f.disaggregation) = true;
    EXPECT_TRUE(f.fabric());
    const SimSpeedups s = choose_speedups(SimOptions{}, f);
    EXPECT_FALSE(s.chain_stages || s.closed_form_pipeline || s.closed_form_sends) << which;
    EXPECT_FALSE(s.lone_flows_on_contention_links) << which;
    EXPECT_TRUE(s.lone_flows) << which;
  }
}

TEST(SimStrategy, PlatformWithoutLoneFlows) {
  SimScenarioFacts f = plain();
  f.lone_flow_platform = false;
  const SimSpeedups s = choose_speedups(SimOptions{}, f);
  EXPECT_FALSE(s.lone_flows || s.closed_form_sends);
  EXPECT_TRUE(s.closed_form_pipeline);
}

TEST(SimStrategy, AnExplicitFalseTurnsItsSpeedupAndTheOnesBuiltOnItOff) {
  SimOptions o;
  o.closed_form_pipeline = false;
  SimSpeedups s = choose_speedups(o, plain());
  EXPECT_TRUE(s.chain_stages && s.lone_flows);
  EXPECT_FALSE(s.closed_form_pipeline || s.closed_form_sends);

  o = SimOptions{};
  o.timer_stages = false;
  s = choose_speedups(o, plain());
  EXPECT_FALSE(s.timer_stages || s.chain_stages || s.closed_form_pipeline || s.closed_form_sends);

  o = SimOptions{};
  o.aggregate_stage_execs = false;
  s = choose_speedups(o, plain());
  EXPECT_FALSE(s.aggregate_stage_execs || s.timer_stages || s.chain_stages);

  o = SimOptions{};
  o.lone_flows = false;
  s = choose_speedups(o, plain());
  EXPECT_FALSE(s.lone_flows || s.closed_form_sends);
  EXPECT_TRUE(s.closed_form_pipeline);

  o = SimOptions{};
  o.closed_form_sends = false;
  s = choose_speedups(o, plain());
  EXPECT_FALSE(s.closed_form_sends);
  EXPECT_TRUE(s.closed_form_pipeline && s.lone_flows);

  o = SimOptions{};
  o.exclusive_links_analytic = false;
  o.analytic_intra_node_collectives = false;
  s = choose_speedups(o, plain());
  EXPECT_FALSE(s.exclusive_links_analytic || s.analytic_intra_node_collectives);
}

TEST(SimStrategy, UnconditionalOnesAsAsked) {
  const SimSpeedups u = unconditional_speedups();
  EXPECT_TRUE(u.aggregate_stage_execs && u.analytic_intra_node_collectives &&
              u.exclusive_links_analytic && u.timer_stages);
  EXPECT_FALSE(u.chain_stages || u.closed_form_pipeline || u.lone_flows ||
               u.lone_flows_on_contention_links || u.closed_form_sends);
}

}  // namespace
}  // namespace prima::sim
