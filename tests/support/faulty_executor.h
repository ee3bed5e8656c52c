// FaultyExecutor: a test Executor on the ManualRuntime for health checks and load migration.
// Steps take step_time(plan) x slowdown seconds (slowdown > 1: a "hot", throttled replica);
// it can fail the next n steps, or every step at once while `down` (a GPU that is off), and
// answers check_health ok, with an error, or never (an unresponsive device), after
// probe_delay_s. Single-threaded (the manual loop). Header-only.
#pragma once

#include <functional>
#include <string>
#include <utility>

#include "engine/runtime.h"
#include "tests/support/manual_runtime.h"

namespace prima::testing {

class FaultyExecutor : public Executor {
 public:
  using StepTime = std::function<double(const StepBatch&)>;
  enum class Health { kOk, kError, kNever };

  FaultyExecutor(ManualRuntime* rt, StepTime step_time, std::string name = "gpu")
      : rt_(rt), step_time_(std::move(step_time)), name_(std::move(name)) {}

  void launch(const StepBatch& step, std::function<void(const StepResult&)> done) override {
    ++launched_;
    StepResult r;
    r.start_s = rt_->now();
    if (down_ || fail_next_ > 0) {
      if (!down_) --fail_next_;
      ++failed_;
      r.end_s = r.start_s;  // a dead device fails at once
      r.status = unavailable(name_ + " is down");
      rt_->post([r, done = std::move(done)] { done(r); });
      return;
    }
    const double dt = step_time_(step) * slowdown;
    r.end_s = r.start_s + dt;
    r.stage_busy_s = {dt};
    rt_->at(r.end_s, [r, done = std::move(done)] { done(r); });
  }

  void check_health(std::function<void(Status)> done) override {
    ++probes_;
    if (health == Health::kNever) return;
    Status st = health == Health::kOk ? ok_status() : unavailable(name_ + " does not answer");
    if (probe_delay_s <= 0) return done(st);
    rt_->at(rt_->now() + probe_delay_s, [st, done = std::move(done)] { done(st); });
  }

  // Every step fails at once while down; set_down(false) also makes probes answer ok.
  void set_down(bool down) {
    down_ = down;
    health = down ? Health::kError : Health::kOk;
  }
  void fail_next(int n) { fail_next_ = n; }
  int launched() const { return launched_; }
  int failed() const { return failed_; }
  int probes() const { return probes_; }

  double slowdown = 1.0;
  Health health = Health::kOk;
  double probe_delay_s = 0;

 private:
  ManualRuntime* rt_;
  StepTime step_time_;
  std::string name_;
  bool down_ = false;
  int fail_next_ = 0;
  int launched_ = 0, failed_ = 0, probes_ = 0;
};

}  // namespace prima::testing
