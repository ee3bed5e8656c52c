// ProbePool: runs simulations in child processes, at most `jobs` at a time (SimGrid allows
// one engine per process, and processes use the cores). start() forks; the child parses the
// scenario JSON, runs run_simulation and writes one JSON line of capacity::ProbeMetrics to a pipe,
// then _exits; its stdout and stderr go to /dev/null. wait() blocks until at least one child
// has finished and returns the finished ones (a child that crashed or wrote nothing is a
// failed probe naming the signal or exit status). The parent must not hold a SimGrid engine.
// Single-threaded: one owner drives it. Kills its children when destroyed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/capacity/probe_runner.h"
#include "engine/config/json_reader.h"

namespace prima::sim {

using capacity::ProbeDone;
using capacity::ProbeJob;

// The planner's ProbeRunner on this machine's cores.
class ProbePool : public capacity::ProbeRunner {
 public:
  explicit ProbePool(int jobs);
  ~ProbePool() override;
  ProbePool(const ProbePool&) = delete;
  ProbePool& operator=(const ProbePool&) = delete;

  int jobs() const { return jobs_; }
  int running() const override { return static_cast<int>(children_.size()); }
  bool full() const override { return running() >= jobs_; }
  // Forks a child for the job. An error (fork or pipe failed) is returned as Status.
  Status start(const ProbeJob& job) override;
  // Waits for at least one child to finish (nothing to wait for: returns empty).
  std::vector<ProbeDone> wait() override;
  void kill_all();

 private:
  struct Child {
    int pid = -1;
    int fd = -1;
    std::uint64_t tag = 0;
    std::string out;
    bool eof = false;
  };
  int jobs_;
  std::vector<Child> children_;
};

// What a child does: parse and simulate, return the metrics (also used in-process by tests
// that fork themselves).
capacity::ProbeMetrics run_probe(const ProbeJob& job);

}  // namespace prima::sim
