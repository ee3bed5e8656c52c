// ClosedForm: steps timed entirely at launch (SimSpeedups::closed_form_pipeline and
// closed_form_sends; private to the executor's sources; read sim_executor.h, then
// sim_executor_compute.h and sim_executor_transfers.h first).
//
// Vocabulary:
//   plan          a step's start and end in each stage computed at launch with the FIFO rule
//                 of the event-driven stages: start = max(arrival, the stage's free time),
//                 end = start + flops / lead speed (the same expressions as start_compute and
//                 start_timer, in the same order). can_plan: every stage would run as a
//                 timer (runs_as_timer), or as a timer carrying a folded send.
//   timed at launch  a planned step (Step::timed_at_launch): its stages' times are set, its
//                 busy times final, and one runtime timer at its last stage's end finishes it
//                 (commit_timed). Without folded sends: time_without_sends (cannot fail).
//   event-driven  a step going through the stages one event at a time (sim_executor.cpp);
//                 planned and event-driven steps never run side by side in one replica.
//   planned send  (closed_form_sends) a folded send registered at launch for its planned
//                 interval (plan_fold); unplan() takes a failed plan's sends back.
//   materialize   a flow starts on a planned send's links (on_fold_converted): every step
//                 timed at launch continues event-driven from where its plan has it now: in
//                 its stage's timer (its send folded), or waiting for a stage.
//   promote       at a later launch, when every step in flight is in a stage's timer or
//                 waiting for a stage, they are all planned again (try_promote).
//
// Why it is exact: steps enter stage 0 in launch order and every stage serves its FIFO in
// order, so stage s of a step starts at max(its end of stage s - 1 (launch time for stage
// 0), the end of the stage's previous step) and ends flops / lead speed later: what the
// event-driven stages compute (start_stage, start_timer, stage_done, the chained and
// deferred ends) with the same operations on the same doubles. The stages' free_at_s carry
// the previous step's end; with no event-driven step in flight nothing else occupies a
// stage. Valid while GPU speeds and link claims never change (chain_stages' conditions).
//
// Planned sends: a send rides on its stage's timer when its links are free for its whole
// interval, which an event-driven stage checks when it starts and a plan checks at launch,
// registering every send of the step ahead. A plan's send is as free as the event-driven
// stage would have found it, unless a flow that starts between the launch and the stage's
// start would have been seen: such a flow converts the planned send, and the replica's
// planned steps materialize, every later send deciding again at its stage's start. A flow
// that is on the links at launch but gone by the send's start makes the plan fail (the step
// runs event-driven): a plan is never freer than the event-driven stages.
//
// Thread-safety: simulation loop only. Ownership: borrows the Replica (its owner's).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/sim/sim_executor_state.h"

namespace prima::sim::exec {

class ClosedForm {
 public:
  explicit ClosedForm(Replica& rep) : rep_(rep) {}

  // A step whose every stage runs as a timer (with closed_form_sends: or as a timer carrying
  // its folded PP send), launched while no step runs event-driven, gets every stage's start
  // and end at launch and one timer, at the last stage's end, that finishes it. False (st
  // untouched) when it cannot: st runs event-driven.
  bool try_time_at_launch(Step* st);
  // With closed_form_sends: every step timed at launch continues event-driven from where its
  // plan has it at `now` (in its stage's timer, or waiting for the stage), its later sends
  // unregistered (they decide at their stage's start, as event-driven sends do).
  void materialize(double now);
  // A folded send is converted (a SimGrid flow starts on its links): a step timed at launch
  // continues event-driven (materialize) unless the send ends within eps; then, if it is the
  // step's current stage's send, it unfolds.
  void on_fold_converted(FoldedSend* f, double now, double eps);

  // The executor's count of event-driven steps in flight (launched, not timed at launch,
  // not finished).
  void event_driven_started() { ++event_driven_inflight_; }
  void finished(const Step* st) {
    if (!st->timed_at_launch) --event_driven_inflight_;
  }

  std::uint64_t materialized() const { return materialized_; }
  std::uint64_t promoted() const { return promoted_; }

 private:
  // Whether stages [from, end) of st can be planned (timers, or timers with a foldable send).
  // *folds (optional): set when a stage's send must fold.
  bool can_plan(const Step* st, std::size_t from, bool* folds = nullptr);
  // Plans stages [from, end) of x arriving at `arrival` against plan_free_ (each stage's free
  // time, updated), registering each folded send ahead (kept in planned_ for unplan()).
  // False when a send's links are not free for its whole interval.
  bool plan_stages(Step* x, std::size_t from, double arrival);
  // Plans stage's PP send of x folded into its timer from `start` (*flops: the compute's,
  // then the timer's): registers it when its links are free for its interval.
  bool plan_fold(Stage& stage, Step* x, const perf::StageCost& c, double start, double* flops);
  void unplan();  // unregisters the sends plan_stages registered since planned_ was cleared
  // x's planned stages [from, end) become its times; arms its finish timer.
  void commit_timed(Step* x, std::size_t from);
  // try_time_at_launch for a step none of whose stages sends by a flow: the closed-form
  // pipeline's plan, written into the stages directly (it cannot fail).
  void time_without_sends(Step* st);
  // Fills inflight_ (rarely needed: materialize, try_promote).
  void in_flight_steps();
  // With closed_form_sends: when every step in flight is event-driven and at a point whose
  // future is a plan (computing in a timer, its send folded or none following; or waiting
  // for a stage), plans them all from there and times them at launch. False (nothing
  // changed) otherwise, or when a send of the plan finds its links taken.
  bool try_promote();

  Replica& rep_;
  int event_driven_inflight_ = 0;  // launched steps not timed at launch, not yet finished
  std::uint64_t materialized_ = 0;
  std::uint64_t promoted_ = 0;
  std::vector<Step*> inflight_;       // in_flight_steps(): launched, not finished, in launch order
  std::vector<double> plan_free_;     // plan_stages: each stage's free time
  std::vector<FoldedSend*> planned_;  // plan_stages: sends registered, for unplan()
};

}  // namespace prima::sim::exec
