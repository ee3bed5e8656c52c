// ProbeRunner: the seam between the planner and what runs its simulations. The planner hands
// it one probe at a time (a scenario document with the configuration's and the probe's
// overrides applied) and collects the metrics of those that finished. The sim backend's
// ProbePool (backends/sim/probe_pool.h) runs each in a child process; a test can run them in
// process, or answer from a closed form. Single-threaded: one owner drives a runner.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/capacity/rate_search.h"
#include "engine/config/json_reader.h"
#include "engine/core/status.h"

namespace prima::capacity {

struct ProbeJob {
  std::uint64_t tag = 0;  // the caller's identity for the job
  config::Json scenario;  // a scenario document (overrides already applied)
  std::string file;       // names the scenario in messages
  std::string base_dir;   // for relative paths inside it
};

struct ProbeDone {
  std::uint64_t tag = 0;
  ProbeMetrics metrics;
};

class ProbeRunner {
 public:
  virtual ~ProbeRunner() = default;
  virtual int running() const = 0;
  // No further start() until a wait() returned some.
  virtual bool full() const = 0;
  // Starts a probe. An error means the runner could not start it (fork or pipe failed); a
  // simulation that fails is a finished probe whose metrics say why.
  virtual Status start(const ProbeJob& job) = 0;
  // Waits for at least one running probe to finish and returns the finished ones (empty when
  // none is running).
  virtual std::vector<ProbeDone> wait() = 0;
};

}  // namespace prima::capacity
