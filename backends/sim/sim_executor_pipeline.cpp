// SimExecutor, closed-form pipeline (SimOptions::closed_form_pipeline): a step whose stages
// all run as timers is timed entirely at launch. See sim_executor.h.
//
// Why it is exact: steps enter stage 0 in launch order and every stage serves its FIFO in
// order, so stage s of a step starts at max(its end of stage s - 1 (launch time for stage
// 0), the end of the stage's previous step) and ends flops / lead speed later: what the
// event-driven stages compute (start_stage, start_timer, stage_done, the chained and
// deferred ends) with the same operations on the same doubles. The stages' free_at_s carry
// the previous step's end; with no event-driven step in flight nothing else occupies a
// stage. Valid while GPU speeds and link claims never change (chain_stages' conditions).
//
// Thread-safety: simulation loop only, like the rest of the executor.
#include <algorithm>
#include <simgrid/kernel/Timer.hpp>

#include "backends/sim/sim_executor.h"
#include "backends/sim/sim_executor_step.h"

namespace prima::sim {

bool SimExecutor::can_time_at_launch(const Step* st) {
  if (!options_.closed_form_pipeline || event_driven_inflight_ > 0) return false;
  for (Stage& stage : stages_) {
    if (!runs_as_timer(stage, st)) return false;
    if (!stage.hosts_known) refresh_hosts(stage);
    // A GPU that is off fails the step, a stalled lead never ends it: the event-driven path.
    if (stage.down != nullptr || !(stage.lead_speed > 0)) return false;
  }
  return true;
}

void SimExecutor::time_at_launch(Step* st) {
  st->timed_at_launch = true;
  const double nominal = platform_->nominal_speed();
  double t = runtime_->now();  // when st reaches the stage
  for (Stage& stage : stages_) {
    st->stage = stage.index;
    st->phase = Step::Phase::kCompute;
    const perf::StageCost& c = stage_cost(st, stage.index);
    const double analytic_s = stage_analytic_s(stage, st, c);
    // start_compute's flops and start_timer's end: the same expressions.
    const double lead = stage.lead_speed;
    const double flops =
        std::max(0.0, c.compute_s * nominal * (lead / stage.slowest_speed) + analytic_s * lead);
    const double start = stage.free_at_s > t ? stage.free_at_s : t;
    const double end = start + flops / lead;
    if (stage.index == 0) st->start_s = start;
    st->busy[static_cast<size_t>(stage.index)] = end - start;
    stage.free_at_s = end;
    t = end;
    ++activities_started_;
  }
  st->timer = runtime_->at(t, [this, st] {
    st->timer = kNoTimer;  // fired
    finish(st);
  });
}

}  // namespace prima::sim
