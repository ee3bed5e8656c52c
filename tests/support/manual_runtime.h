// ManualRuntime: a deterministic Runtime for unit tests. Time moves only when the test says
// so (advance_to / run_until_idle); timers fire in (time, insertion) order. Also a
// ManualExecutor whose steps take a fixed or computed time on the manual clock.
// Single-threaded: post() from other threads is not supported here.
#pragma once

#include <functional>
#include <utility>

#include "engine/core/virtual_runtime.h"
#include "engine/runtime.h"

namespace prima::testing {

// The manual clock of the tests is the engine's VirtualRuntime (engine/core/virtual_runtime.h).
using ManualRuntime = VirtualRuntime;

// Runs every step in `step_time(plan)` seconds of manual time.
class ManualExecutor : public Executor {
 public:
  using StepTime = std::function<double(const StepBatch&)>;
  ManualExecutor(ManualRuntime* rt, StepTime step_time, int max_inflight = 1)
      : rt_(rt), step_time_(std::move(step_time)), max_inflight_(max_inflight) {}
  void launch(const StepBatch& step, std::function<void(const StepResult&)> done) override;
  int max_inflight() const override { return max_inflight_; }
  int launched() const { return launched_; }
  // When set, the next launched step fails with this status.
  void fail_next(Status s) { fail_next_ = std::move(s); }

 private:
  ManualRuntime* rt_;
  StepTime step_time_;
  int max_inflight_;
  int launched_ = 0;
  Status fail_next_;
};

}  // namespace prima::testing
