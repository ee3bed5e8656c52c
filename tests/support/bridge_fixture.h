// An EngineBridge over one replica of a ManualExecutor (10 ms a step, 100 KV blocks) on a
// ManualRuntime: the engine side of the server's unit tests, advanced by hand.
#pragma once

#include <memory>
#include <vector>

#include "engine/cluster/serving_engine.h"
#include "server/engine_bridge.h"
#include "tests/support/manual_runtime.h"

namespace prima::testing {

struct BridgeFixture {
  ManualRuntime rt;
  ManualExecutor ex{&rt, [](const StepBatch&) { return 0.01; }};
  metrics::Recorder rec;
  std::unique_ptr<cluster::ServingEngine> eng;
  std::unique_ptr<server::EngineBridge> bridge;
  BridgeFixture() {
    cluster::ReplicaSetup rs;
    rs.executor = &ex;
    rs.num_kv_blocks = 100;
    eng = std::make_unique<cluster::ServingEngine>(&rt, cluster::EngineOptions{},
                                                   std::vector<cluster::ReplicaSetup>{rs}, &rec);
    bridge = std::make_unique<server::EngineBridge>(
        eng.get(), &rt, [this](std::function<void()> fn) { rt.post(fn); });
  }
};

}  // namespace prima::testing
