// RealCluster: a GGUF model on this machine's CPU, built and ready to serve: the RealBackend
// (model file, tokenizer, communicators, KV cache, executors) and, on job rank 0, the
// WallRuntime the engine's loop runs on, the Recorder and the ServingEngine of its replicas
// (RealBackendOptions::replicas, one unless several were launched in the job). The real
// backend's counterpart of sim::SimCluster (backends/sim/sim_cluster.h): `prima serve
// --backend real` drives it with HTTP arrivals, `prima generate` with one prompt. Nothing is
// started: the caller calls engine->start() when it wants warm-up and the autoscaler.
//
// Ranks: under mpirun with --tp/--pp (and --replicas) every rank opens the cluster. Job rank 0
// (is_leader()) gets the engine; the other ranks get the backend only and call run_worker(),
// which executes job rank 0's steps until it calls shutdown().
//
// Thread-safety: the engine, the recorder and run() belong to the thread that runs the loop;
// rt->post() and stop() may be called from any thread. Ownership: owns everything it built;
// the destructor shuts the backend down (joining the executor's worker, which posts to rt)
// before the engine, the recorder and the runtime are destroyed.
#pragma once

#include <functional>
#include <memory>

#include "backends/real/real_backend.h"
#include "backends/wall/wall_runtime.h"
#include "engine/cluster/serving_engine.h"
#include "engine/metrics/recorder.h"

namespace prima::real {

struct RealCluster {
  std::unique_ptr<RealBackend> backend;
  // Rank 0 only (null on the other ranks):
  std::unique_ptr<WallRuntime> rt;
  std::unique_ptr<metrics::Recorder> recorder;
  std::unique_ptr<cluster::ServingEngine> engine;
  int max_model_len = 0;  // the context served: the options' max_model_len capped at the model's

  RealCluster() = default;
  RealCluster(const RealCluster&) = delete;
  RealCluster& operator=(const RealCluster&) = delete;
  ~RealCluster();

  bool is_leader() const { return backend->is_leader(); }
  // Other ranks: executes rank 0's steps until it shuts down; the worker's status.
  Status run_worker() { return backend->run_worker(); }
  // Rank 0: runs the engine's loop on the calling thread until stop(), calling publish() on
  // the loop every publish_every_s of wall time (the loop otherwise sleeps until work
  // arrives), e.g. to publish the engine's gauges to other threads.
  void run(const std::function<void()>& publish, double publish_every_s = 0.02);
  void stop() { rt->stop(); }  // any thread
  // Rank 0: joins the executor's worker and releases the other ranks (idempotent).
  void shutdown() { backend->shutdown(); }
};

// Opens the model (every rank) and, on job rank 0, builds the engine of o.replicas replicas
// of TP x PP ranks each: max_num_seqs sequences at once, KV blocks as RealBackend allocates them,
// contexts up to max_model_len. Errors are RealBackend::open's: kInvalidArgument or kNotFound where
// the model file or the options are bad, another code where the machine failed.
Result<std::unique_ptr<RealCluster>> open_real_cluster(const RealBackendOptions& o);

}  // namespace prima::real
