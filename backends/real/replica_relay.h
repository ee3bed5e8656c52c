// The relay between job rank 0 (the engine) and the leader of another replica of the same
// job (JobComms in comm/communicator.h). Job rank 0's RealExecutor for replica r drives a
// RelayRunner, which forwards each operation to the replica's leader as a StepInput message
// (kForward: begin, kFinish: finish the oldest, kPing, kShutdown); the leader runs them on its
// replica's ranks with serve_relay and answers kFinish and kPing with a reply (status and
// sampled tokens, step_codec.h). The two sides see the same order of operations, so the
// replica's pipeline (up to PP steps in flight) runs as on job rank 0's own replica.
//
// Failures: a step that fails on the replica (one of its ranks stopped answering) comes back
// as the step's error status, naming the rank as the replica saw it; the relay's own timeout
// (longer than the replica's) covers a leader that stops answering. After a failure the
// leader answers every later operation with it (the replica's ranks are out of step) and
// stays up until the job ends, so that the job's healthy replicas keep serving.
//
// Not thread-safe: one thread drives each side (job rank 0: the replica's executor worker;
// the leader: its main thread).
#pragma once

#include <string>

#include "backends/real/comm/communicator.h"
#include "backends/real/step_codec.h"
#include "backends/real/step_runner.h"

namespace prima::real {

class RelayRunner : public StepRunner {
 public:
  // relay: rank 0 is this process (job rank 0), rank 1 the leader of `replica`, whose ranks
  // are job ranks [first_rank, first_rank + ranks) (errors name them).
  RelayRunner(Communicator* relay, int replica, int first_rank, int ranks);

  Status begin_step(const StepInput& s) override;
  Result<SampledTokens> finish_step(const StepInput& s) override;
  Status ping() override;
  void shutdown() override;

 private:
  Status send_op(const StepInput& op);
  Result<SampledTokens> reply(const char* what);

  Communicator* relay_;
  std::string name_;  // "replica 1 (job ranks 2-3, ranks 0-1 within it)"

  bool shut_down_ = false;
};

// The leader of replica r >= 1: runs job rank 0's operations from `relay` (rank 0 = job rank
// 0, this process rank 1) on `runner` until kShutdown, then releases the replica's ranks.
// Returns an error only where the relay itself breaks down (not for a failed step).
Status serve_relay(StepRunner* runner, Communicator* relay);

}  // namespace prima::real
