// StepRunner: what the leader of a replica's executor (RealExecutor) drives: steps begun and
// finished in FIFO order (up to PP of them in flight), pings, and the release of the ranks.
// RankRunner runs them on this process's ranks; RelayRunner (replica_relay.h) hands them to
// the leader of another replica of the job. Not thread-safe: one thread drives a runner.
#pragma once

#include "backends/real/step_codec.h"
#include "engine/core/status.h"

namespace prima::real {

class StepRunner {
 public:
  virtual ~StepRunner() = default;
  // Checks the step and starts it on the replica's ranks.
  virtual Status begin_step(const StepInput& s) = 0;
  // What the oldest begun step sampled.
  virtual Result<SampledTokens> finish_step(const StepInput& s) = 0;
  // With no step in flight: every rank of the replica answers.
  virtual Status ping() = 0;
  // Tells the replica's other ranks to return from their loops (idempotent).
  virtual void shutdown() = 0;
};

}  // namespace prima::real
