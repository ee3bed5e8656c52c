// ActivityDispatch: routes SimGrid's global activity-completion signal to the object that
// started the activity, and defers releasing finished activities.
//
// In SimGrid 3.32 `Activity::on_completion_cb` is one static signal for every activity. It is
// connected once (install()); an activity whose data (Activity::set_data) points to a
// CompletionTarget gets target->on_activity_end(activity, ok) when it finishes, fails or is
// cancelled. Activities without such data are ignored.
//
// An owner must keep its ActivityPtr alive until completion and must not drop the last
// reference inside the activity's own callback: it hands the pointer to retire(), which keeps
// it until the next completion or the end of run()/run_until() (clear_retired()).
//
// Activities are started through start(): it brings SimGrid's clock up to the runtime's
// (SimRuntime::before_activity_start(): the runtime fires its timers without SimGrid while
// nothing is in flight) and counts the activity in active() until its completion signal.
// Starting an Exec or Io any other way aborts with an internal error (their start signals
// check it; SimGrid 3.32 has none for a host-to-host Comm).
//
// Thread-safety: none; simulation loop only. Ownership: retired pointers are owned here.
#pragma once

#include <simgrid/forward.h>

namespace prima::sim {

class CompletionTarget {
 public:
  virtual ~CompletionTarget() = default;
  // ok: the activity finished normally (not failed, not cancelled).
  virtual void on_activity_end(const simgrid::s4u::Activity& a, bool ok) = 0;
};

class ActivityDispatch {
 public:
  // Connects the completion signal (idempotent).
  static void install();
  // Starts `a`, whose data must be its CompletionTarget (Activity::set_data), at now().
  static void start(const simgrid::s4u::ActivityPtr& a);
  // Activities started and not yet finished, failed or cancelled.
  static int active();
  // Keeps `a` alive until it is safe to release it.
  static void retire(simgrid::s4u::ActivityPtr a);
  static void clear_retired();
};

}  // namespace prima::sim
