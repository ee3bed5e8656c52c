// SimCluster: a scenario's simulated cluster, built and ready to serve: the SimGrid platform,
// the runtime on its clock, the fault injector (when the scenario has faults), one
// SimExecutor per replica, the fabric (when a policy moves bytes) and the engine's
// ServingEngine with its Recorder. `prima simulate` (run_simulation) drives it with the
// scenario's workload; `prima serve --backend sim` (the Emulator) drives it with HTTP arrivals
// paced to the wall clock. Nothing is started: the caller calls engine->start() (and
// injector->start()) before running the platform.
//
// Thread-safety: none; every member is for the thread that built it (the simulation loop),
// except rt->post(). Ownership: owns everything it built; members are destroyed in reverse
// order of declaration (the engine before the executors, the platform last). One per process
// (SimGrid allows one engine per process).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/sim/fault_injector.h"
#include "backends/sim/platform.h"
#include "backends/sim/sim_executor.h"
#include "backends/sim/sim_fabric.h"
#include "backends/sim/sim_runtime.h"
#include "backends/sim/sim_strategy.h"
#include "engine/cluster/serving_engine.h"
#include "engine/metrics/recorder.h"
#include "engine/perf/cost_model.h"
#include "engine/plan/parallel_plan.h"
#include "engine/scenario/scenario.h"

namespace prima::sim {

struct SimCluster {
  const scenario::Scenario* sc = nullptr;  // borrowed; outlives the cluster
  plan::MemoryFit fit;
  SimSpeedups speedups;           // what its executors apply (sim_strategy.h)
  cluster::ClusterOptions copts;  // the scenario's, with max_replicas capped to the topology
  int max_capped_from = 0;        // max_replicas asked for, when capped (else 0)
  int kv_blocks = 0;              // per replica
  std::vector<plan::ReplicaPlacement> placements;  // replicas started first
  std::vector<plan::ReplicaPlacement> pool;        // autoscaling: every placement that fits
  std::vector<std::string> load_errors;            // replicas that did not start
  std::vector<int> slot_of_replica;                // replica id -> index into placements/pool
  std::vector<int> free_slots;                     // unused indices into pool

  std::unique_ptr<SimPlatform> platform;
  std::unique_ptr<SimRuntime> rt;
  std::unique_ptr<FaultInjector> injector;  // null without faults
  std::unique_ptr<perf::CostModel> cost;
  std::vector<std::unique_ptr<SimExecutor>> executors;
  std::unique_ptr<metrics::Recorder> recorder;
  std::unique_ptr<cluster::ServingEngine> engine;
  std::unique_ptr<SimFabric> fabric;  // null unless autoscaling, disaggregation or faults
  // KV offload (scenario kv_offload): the tiers every replica shares (remote storage), and
  // the per-replica tiers' specs.
  std::vector<std::shared_ptr<kv::KvTier>> shared_tiers;  // by tier index; null if per replica
  // Tier `i` of the scenario's kv_offload for replicas of this memory fit and plan (a pool's
  // or the deployment's): a block is block_size tokens of the replica's KV, its bytes counted
  // once (not the copies TP ranks hold), each GPU reading its share at the tier's bandwidth.
  kv::KvTierSpec tier_spec(std::size_t i, const plan::MemoryFit& f,
                           const plan::ParallelPlan& p) const;
  // Disaggregated pools with their own layout and batch limits (disaggregation.prefill /
  // .decode): pools[0] prefill, pools[1] decode, and each placement's pool (pool_of, by
  // index into placements). Empty without them: every replica is the deployment's.
  struct Pool {
    std::string role;
    plan::GpuSpec gpu;
    plan::ParallelPlan plan;
    plan::MemoryFit fit;
    std::unique_ptr<perf::CostModel> cost;
    int kv_blocks = 0;
    std::shared_ptr<const sched::SchedulerOptions> scheduler;
  };
  std::vector<Pool> pools;
  std::vector<int> pool_of;

  // A fresh executor on a placement, as the engine's ReplicaSetup (of pools[pool], or the
  // deployment's when pool < 0).
  cluster::ReplicaSetup make_setup(const plan::ReplicaPlacement& pl, int pool = -1);
};

// Builds the cluster of `sc` (checks the plan first; errors name the scenario file).
Result<std::unique_ptr<SimCluster>> build_sim_cluster(const scenario::Scenario& sc);

}  // namespace prima::sim
