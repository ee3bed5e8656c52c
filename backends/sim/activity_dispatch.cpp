#include "backends/sim/activity_dispatch.h"

#include <cstdio>
#include <cstdlib>
#include <simgrid/s4u/Activity.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Io.hpp>
#include <vector>

#include "backends/sim/sim_runtime.h"

namespace prima::sim {
namespace {

bool g_installed = false;
int g_active = 0;
bool g_starting = false;  // inside start(): the start signal below is expected
// Never destroyed: SimGrid may tear down after static destructors run.
std::vector<simgrid::s4u::ActivityPtr>* g_retired = new std::vector<simgrid::s4u::ActivityPtr>();
std::vector<simgrid::s4u::ActivityPtr>* g_releasing = new std::vector<simgrid::s4u::ActivityPtr>();

void on_completion(const simgrid::s4u::Activity& a) {
  // Activities retired before this completion have had their own callbacks: release them.
  ActivityDispatch::clear_retired();
  auto* target = a.get_data<CompletionTarget>();
  if (target == nullptr) return;
  if (g_active > 0 && --g_active == 0) {
    if (SimRuntime* rt = SimRuntime::current()) rt->on_simgrid_idle();
  }
  target->on_activity_end(a, a.get_state() == simgrid::s4u::Activity::State::FINISHED);
}

[[noreturn]] void misuse(const char* what) {
  std::fprintf(stderr, "prima: internal error: %s\n", what);
  std::abort();
}

// An activity started any other way would start on a stale clock and go uncounted: the
// runtime would fire its timers without letting SimGrid finish it. Make that loud (Execs and
// Ios: SimGrid 3.32 has no start signal for a host-to-host Comm).
void on_start(const simgrid::s4u::Activity&) {
  if (!g_starting)
    misuse(
        "a SimGrid activity was started without ActivityDispatch::start (see activity_dispatch.h)");
}

}  // namespace

void ActivityDispatch::install() {
  if (g_installed) return;
  g_installed = true;
  simgrid::s4u::Activity::on_completion_cb(&on_completion);
  simgrid::s4u::Exec::on_start_cb([](const simgrid::s4u::Exec& e) { on_start(e); });
  simgrid::s4u::Io::on_start_cb([](const simgrid::s4u::Io& io) { on_start(io); });
}

void ActivityDispatch::start(const simgrid::s4u::ActivityPtr& a) {
  install();
  if (a->get_data<CompletionTarget>() == nullptr)
    misuse("ActivityDispatch::start: the activity has no CompletionTarget (Activity::set_data)");
  if (SimRuntime* rt = SimRuntime::current()) rt->before_activity_start();
  ++g_active;
  g_starting = true;
  a->start();
  g_starting = false;
}

int ActivityDispatch::active() {
  return g_active;
}

void ActivityDispatch::retire(simgrid::s4u::ActivityPtr a) {
  g_retired->push_back(std::move(a));
}

void ActivityDispatch::clear_retired() {
  if (g_retired->empty()) return;
  // Swap first: releasing may (in principle) re-enter retire().
  std::swap(*g_retired, *g_releasing);
  g_releasing->clear();
}

}  // namespace prima::sim
