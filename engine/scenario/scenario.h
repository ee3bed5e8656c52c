// Scenario: everything one simulated (or served) run needs, loaded from a JSON file with
// strict validation: model, topology, deployment (parallel plan, memory), scheduler, routing,
// workload, SLO, seed, duration, calibration, and the backend's own section ("sim").
// `--set path=value` overrides are applied to the JSON before validation. Plain value.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/cluster/cluster_options.h"
#include "engine/cluster/router.h"
#include "engine/config/json_reader.h"
#include "engine/faults/fault_spec.h"
#include "engine/model/model_spec.h"
#include "engine/perf/calibration.h"
#include "engine/perf/engine_profile.h"
#include "engine/plan/parallel_plan.h"
#include "engine/plan/topology.h"
#include "engine/scenario/kv_offload.h"
#include "engine/scenario/speculative.h"
#include "engine/sched/scheduler.h"
#include "engine/workload/workload.h"

namespace prima::scenario {

// Service-level objective. A request meets it when every bound that is set (> 0) holds; a
// request's own "sla" (from its metadata) bounds its TTFT.
struct SloSpec {
  double ttft_s = 0;
  double tpot_s = 0;
  double e2e_s = 0;
  double attainment = 0;  // share of requests that must meet the bounds; 0: unset (0.99 assumed)
};

struct Scenario {
  std::string name;
  std::string file;      // where it came from ("<embedded>/scenarios/default.json" if built in)
  std::string base_dir;  // for relative paths inside it
  std::uint64_t seed = 1;
  double duration_s = 60;     // arrivals stop at this simulated time
  double max_drain_s = 3600;  // then in-flight requests get this long to finish
  model::ModelSpec model;
  model::Quantization quantization = model::Quantization::kFP16;
  plan::Topology topology;
  plan::ParallelPlan plan;
  plan::MemoryOptions memory;
  sched::SchedulerOptions scheduler;
  SpeculativeSpec speculative;         // "speculative": off unless given
  std::vector<KvTierConfig> kv_tiers;  // "kv_offload": none unless given
  int max_model_len = 0;               // 0: the model's max_context
  cluster::RoutingPolicy routing = cluster::RoutingPolicy::kRoundRobin;  // = cluster.router.policy
  cluster::ClusterOptions cluster;  // router, autoscaler, disaggregation, caches, warm-up
  workload::WorkloadSpec workload;
  SloSpec slo;
  std::vector<faults::FaultSpec> faults;  // "faults": the fault timeline (docs/faults.md)
  faults::CommEnv env;                    // "env": NCCL_TIMEOUT, UCX_MEMTYPE_CACHE
  perf::Calibration calibration;
  config::Json sim;       // the "sim" section, read by the sim backend
  config::Json resolved;  // the whole scenario JSON after --set overrides
};

// Loads a scenario from a file path, or, when `path` is empty, the embedded default. A path
// that is not a file but names an embedded scenario ("default") loads that one.
Result<Scenario> load_scenario(const std::string& path, const std::vector<std::string>& sets);
// Parses an already-read JSON document (file names messages).
// The run's size against its engine's calibrated range (perf::trust_json): model size, TP,
// max_num_seqs and the longest prompt plus output the workload draws (0: a trace, unknown).
perf::RunFacts run_facts(const Scenario& sc);

Result<Scenario> parse_scenario(const config::Json& j, const std::string& file,
                                const std::string& base_dir);
// Applies one "a.b.c=value" override (value is JSON if it parses as JSON, else a string).
Status apply_set(config::Json* j, const std::string& assignment);

}  // namespace prima::scenario
