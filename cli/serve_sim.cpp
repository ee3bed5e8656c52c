// `prima serve --backend sim`: the cluster backends/sim assembles from the scenario
// (sim::SimCluster; the built-in scenario without --scenario) behind the HTTP server, paced to
// the wall clock by the emulator (backends/sim/emulator.h): only HTTP requests arrive (the
// scenario's workload is not generated) and tokens are released at their simulated times,
// `--speed` times faster than real time.
#include <fmt/format.h>

#include <cstdio>

#include "backends/sim/emulator.h"
#include "backends/sim/sim_cluster.h"
#include "cli/commands.h"
#include "cli/serve.h"
#include "engine/scenario/scenario.h"

namespace prima::cli {
namespace {

// A scenario that does not load or does not build (its plan does not fit included) is the
// user's input.
int bad_scenario(const Status& st) {
  std::fprintf(stderr, "prima serve: %s\n", st.message().c_str());
  return kExitBadInput;
}

}  // namespace

int serve_sim(const ServeOptions& o) {
  sim::EmulatorOptions eo;
  eo.speed = o.speed;
  auto sc = scenario::load_scenario(o.scenario_path, o.sets);
  if (!sc.ok()) return bad_scenario(sc.status());
  auto built = sim::build_sim_cluster(*sc);
  if (!built.ok()) return bad_scenario(built.status());
  sim::SimCluster& cl = **built;
  // No report is written: keep the newest 10,000 request records and an hour of timeline rows
  // (totals stay exact), so a server running for days does not grow (docs/serving.md).
  cl.recorder->set_retention(10000, 3600);
  cl.engine->start();
  if (cl.injector) cl.injector->start();
  sim::Emulator emu(cl.platform.get(), cl.rt.get(), eo);
  server::EngineBridge bridge(cl.engine.get(), cl.rt.get(), [&](std::function<void()> fn) {
    cl.rt->post(std::move(fn));
    emu.wake();
  });
  server::ModelInfo model;
  model.name = sc->model.name;
  apply_served_names(o, &model);
  model.max_model_len = sc->max_model_len > 0 ? sc->max_model_len : sc->model.max_context;
  server::ServerMetrics metrics(model.name, model.max_model_len);
  bridge.set_metrics(&metrics, cl.recorder.get(), cl.recorder->gpus());
  const nlohmann::json limits = engine_limits(*cl.engine);
  std::string layout = fmt::format("TP{}", sc->plan.tensor_parallel);
  if (sc->plan.data_parallel > 1) layout += fmt::format(" x DP{}", sc->plan.data_parallel);
  layout += fmt::format(" x PP{}", sc->plan.pipeline_parallel);
  if (sc->plan.context_parallel > 1) layout += fmt::format(" (CP{})", sc->plan.context_parallel);
  if (sc->plan.expert_parallel > 1)
    layout += sc->plan.expert_tensor_parallel() > 1
                  ? fmt::format(" (EP{} x expert TP{})", sc->plan.expert_parallel,
                                sc->plan.expert_tensor_parallel())
                  : fmt::format(" (EP{})", sc->plan.expert_parallel);
  const std::string banner =
      fmt::format("{} ({}) on {}, {} x {} replica(s), simulated at {}x; {}", model.name, sc->name,
                  sc->topology.name, layout, sc->plan.replicas, eo.speed, describe_limits(limits));
  ServeLoop loop;
  loop.run = [&](const std::function<void()>& publish) { emu.run(publish); };
  loop.stop = [&] { emu.stop(); };
  return run_server(o, &bridge, &metrics, model, banner, loop, [&](nlohmann::json* j) {
    (*j)["sim_time_s"] = emu.sim_time_now();
    (*j)["speed"] = eo.speed;
    (*j)["sim_lag_ms"] = emu.lag_wall_s() * 1e3;
    (*j)["limits"] = limits;
  });
}

}  // namespace prima::cli
