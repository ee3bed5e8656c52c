#include "backends/sim/activity_dispatch.h"

#include <simgrid/s4u/Activity.hpp>
#include <vector>

#include "backends/sim/sim_runtime.h"

namespace prima::sim {
namespace {

bool g_installed = false;
int g_active = 0;
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

}  // namespace

void ActivityDispatch::install() {
  if (g_installed) return;
  g_installed = true;
  simgrid::s4u::Activity::on_completion_cb(&on_completion);
}

void ActivityDispatch::start(const simgrid::s4u::ActivityPtr& a) {
  install();
  if (SimRuntime* rt = SimRuntime::current()) rt->before_activity_start();
  ++g_active;
  a->start();
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
