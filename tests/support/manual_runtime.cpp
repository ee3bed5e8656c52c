#include "tests/support/manual_runtime.h"

namespace prima::testing {

void ManualExecutor::launch(const StepBatch& step, std::function<void(const StepResult&)> done) {
  ++launched_;
  StepResult r;
  r.start_s = rt_->now();
  double dt = step_time_(step);
  r.end_s = r.start_s + dt;
  r.stage_busy_s = {dt};
  if (!fail_next_.ok()) {
    r.status = fail_next_;
    fail_next_ = Status();
  }
  rt_->at(r.end_s, [r, done = std::move(done)] { done(r); });
}

}  // namespace prima::testing
