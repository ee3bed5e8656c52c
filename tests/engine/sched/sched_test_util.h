// Helpers for scheduler tests: sequences, a scheduler driven step by step on a manual clock.
#pragma once

#include <memory>
#include <vector>

#include "engine/sched/scheduler.h"

namespace prima::sched::testutil {

inline std::unique_ptr<Sequence> make_seq(RequestId id, int prompt, int output,
                                          Priority p = Priority::kNormal, Time arrival = 0,
                                          double sla_s = 0) {
  auto s = std::make_unique<Sequence>();
  s->req.id = id;
  s->req.prompt_tokens = prompt;
  s->req.max_output_tokens = output;
  s->req.priority = p;
  s->req.arrival_s = arrival;
  s->req.sla_s = sla_s;
  return s;
}

// Schedules and completes one step at time t (ok result); returns the step.
inline ScheduledStep run_step(Scheduler& sch, Time t) {
  ScheduledStep s = sch.schedule(t);
  if (!s.empty()) sch.complete(s, StepResult{}, t);
  return s;
}

inline bool contains(const ScheduledStep& st, const Sequence* s) {
  for (const Sequence* x : st.seqs)
    if (x == s) return true;
  return false;
}

}  // namespace prima::sched::testutil
