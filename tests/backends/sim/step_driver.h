// A test driver for one SimExecutor that launches steps like a replica: call launch() for each
// step wanted at a time, and every step that ends launches the next until `total` were
// launched. Step i's batch has (i x 7) mod 11 sequences, so a cost function of the batch size
// varies from step to step. Plain struct; not thread-safe (simulation loop).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/sim/sim_executor.h"

namespace prima::sim::testing {

struct StepDriver {
  SimExecutor* ex = nullptr;
  int launched = 0;
  int total = 0;
  std::vector<StepResult> results;
  void launch() {
    StepBatch p;
    p.step_id = static_cast<std::uint64_t>(launched);
    p.shape.num_seqs = (launched * 7) % 11;
    ++launched;
    ex->launch(p, [this](const StepResult& r) {
      results.push_back(r);
      if (launched < total) launch();
    });
  }
};

}  // namespace prima::sim::testing
