// ServingEngine: the serving engine both backends run. It owns the requests' sequences,
// routes each new request to a replica, and reports every request's end exactly once
// (completed, rejected with a reason, or failed with a reason) to the Recorder and to the
// caller's hooks. Time and devices come only through the seam (Runtime, Executors).
// Not thread-safe: every call runs on the engine's loop (servers post into it).
// Owns the sequences and the replicas; borrows the Runtime, Executors and Recorder.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/cluster/replica.h"
#include "engine/cluster/router.h"
#include "engine/metrics/recorder.h"
#include "engine/sched/scheduler.h"

namespace prima::cluster {

struct ReplicaSetup {
  Executor* executor = nullptr;  // borrowed; outlives the engine
  int gpus = 1;                  // GPUs of this replica (tp * pp)
  int num_kv_blocks = 0;
  int stage_gpus = 1;  // GPUs per pipeline stage (tp): busy time per stage x this
  // Device ids per pipeline stage (for per-GPU utilization); may be empty.
  std::vector<std::vector<DeviceId>> devices;
};

struct EngineOptions {
  sched::SchedulerOptions scheduler;
  RoutingPolicy routing = RoutingPolicy::kRoundRobin;
  int max_model_len = 0;  // prompt + output tokens at most (0 = no limit beyond KV capacity)
};

// A snapshot for timelines and gauges.
struct EngineState {
  int running = 0, waiting = 0, replicas_up = 0;
  double kv_usage = 0;  // mean over replicas
  std::int64_t in_system = 0;
};

class ServingEngine {
 public:
  ServingEngine(Runtime* rt, EngineOptions opts, const std::vector<ReplicaSetup>& replicas,
                metrics::Recorder* recorder);

  // Submits a request (its id is assigned when 0). Returns the id. The request may end
  // immediately (rejected) if no replica can ever hold it.
  RequestId submit(Request r);

  // Hooks: called on the loop. on_end runs once per request, after the recorder saw it.
  std::function<void(const Sequence&)> on_token;
  std::function<void(const Sequence&)> on_end;

  // Ends every request still in the system as failed with `reason` (end of a run). The
  // replicas are not touched: call this only when no further events will be processed.
  void fail_all(const std::string& reason);

  EngineState state() const;
  std::int64_t in_system() const { return static_cast<std::int64_t>(live_.size()); }
  const std::vector<std::unique_ptr<Replica>>& replicas() const { return replicas_; }
  const EngineOptions& options() const { return opts_; }

 private:
  void end(Sequence* s, Outcome o, std::string reason);

  Runtime* rt_;
  EngineOptions opts_;
  metrics::Recorder* recorder_;
  ReplicaEvents events_;
  std::vector<std::unique_ptr<Replica>> replicas_;
  std::vector<Replica*> replica_ptrs_;
  std::vector<int> stage_gpus_;
  std::vector<std::vector<std::vector<DeviceId>>> devices_;  // [replica][stage][rank]
  Router router_;
  RequestId next_id_ = 1;
  std::unordered_map<RequestId, std::unique_ptr<Sequence>> live_;
};

}  // namespace prima::cluster
