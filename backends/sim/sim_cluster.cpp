// build_sim_cluster: the construction half of run_simulation (see sim_cluster.h), shared by
// `prima simulate` and the emulator of `prima serve --backend sim`.
#include "backends/sim/sim_cluster.h"

#include <fmt/format.h>

#include "backends/sim/simulation.h"

namespace prima::sim {

cluster::ReplicaSetup SimCluster::make_setup(const plan::ReplicaPlacement& pl, int pool) {
  const Pool* p = pool >= 0 ? &pools[static_cast<std::size_t>(pool)] : nullptr;
  const plan::ParallelPlan& plan = p ? p->plan : sc->plan;
  executors.push_back(std::make_unique<SimExecutor>(platform.get(), rt.get(), pl,
                                                    cost_fns_from(p ? *p->cost : *cost), speedups));
  if (injector) executors.back()->set_fault_injector(injector.get());
  cluster::ReplicaSetup rs;
  rs.executor = executors.back().get();
  rs.gpus = plan.gpus_per_replica();
  rs.stage_gpus = plan.gpus_per_stage();
  rs.num_kv_blocks = p ? p->kv_blocks : kv_blocks;
  if (p) rs.scheduler = p->scheduler;
  rs.devices = pl.devices;
  if (!sc->kv_tiers.empty()) {
    // Each tier as this replica's pool sees it; shared tiers hold the blocks of every pool.
    const plan::MemoryFit& f = p ? p->fit : fit;
    std::vector<std::shared_ptr<kv::KvTier>> tiers;
    std::vector<double> read_s, write_s;
    for (std::size_t i = 0; i < sc->kv_tiers.size(); ++i) {
      kv::KvTierSpec spec = tier_spec(i, f, plan);
      read_s.push_back(spec.seconds_per_block);
      write_s.push_back(spec.write_seconds_per_block);
      tiers.push_back(shared_tiers[i] ? shared_tiers[i]
                                      : std::make_shared<kv::KvTier>(std::move(spec)));
    }
    rs.kv_tiers =
        std::make_shared<kv::KvTiers>(std::move(tiers), std::move(read_s), std::move(write_s));
  }
  return rs;
}

kv::KvTierSpec SimCluster::tier_spec(std::size_t i, const plan::MemoryFit& f,
                                     const plan::ParallelPlan& p) const {
  const scenario::KvTierConfig& t = sc->kv_tiers[i];
  const double gpu_block_bytes = sc->scheduler.block_size * f.kv_bytes_per_token;
  // The copies of a token's KV the group's ranks still hold (MLA's latent, replicated KV
  // heads; context parallelism spreads them): a tier stores the block once.
  const double copies = std::max(
      1.0, static_cast<double>(plan::kv_copies(sc->model, p.tensor_parallel)) / p.context_parallel);
  const int on_node = std::min(p.gpus_per_replica(), sc->topology.node.gpus);
  kv::KvTierSpec spec;
  spec.name = t.type;
  spec.bytes_per_block = gpu_block_bytes * p.tensor_parallel * p.pipeline_parallel / copies;
  spec.capacity_blocks = static_cast<std::int64_t>(t.capacity_bytes / spec.bytes_per_block);
  spec.seconds_per_block =
      gpu_block_bytes / scenario::tier_gpu_bandwidth_Bps(t, sc->topology, on_node);
  spec.write_seconds_per_block =
      gpu_block_bytes / scenario::tier_gpu_write_bandwidth_Bps(t, sc->topology, on_node);
  return spec;
}

namespace {

// The cost model of a plan of the scenario: its GPU's calibration, PCIe for KV swaps, NVLink
// for TP inside a node, the draft model, the expert-load skew.
std::unique_ptr<perf::CostModel> make_cost(const scenario::Scenario& sc,
                                           const plan::ParallelPlan& p, const plan::GpuSpec& gpu) {
  auto cost = std::make_unique<perf::CostModel>(sc.model, sc.quantization, gpu, p,
                                                perf::resolve(sc.calibration, gpu.name).efficiency,
                                                sc.memory.kv_bytes_per_element);
  // Swapped-out KV blocks travel over each GPU's PCIe link to host memory and back.
  cost->set_pcie_bandwidth_Bps(sc.topology.node.pcie.bandwidth_Bps);
  // TP within a node all-reduces over NVLink (a launch-bound layer hides it: cost_model.h).
  if (p.tensor_parallel <= sc.topology.node.gpus) cost->set_tp_link(sc.topology.node.nvlink);
  if (sc.speculative.enabled()) cost->set_draft(sc.speculative.draft, sc.quantization);
  cost->set_expert_load_skew(sc.workload.expert_load_skew);
  return cost;
}

// Disaggregated pools with their own layout, batch limits and GPU type: each pool checked
// on its GPU and placed on nodes of that GPU not taken yet (prefill first). Errors name
// /disaggregation/<pool>.
Status build_pools(const scenario::Scenario& sc, SimCluster* c) {
  const cluster::DisaggregationOptions& d = sc.cluster.disaggregation;
  const int gpn = sc.topology.node.gpus;
  std::vector<char> used(static_cast<std::size_t>(sc.topology.nodes), 0);
  for (int k = 0; k < 2; ++k) {
    const cluster::DisaggregationOptions::Pool& o = k == 0 ? d.prefill : d.decode;
    SimCluster::Pool pool;
    pool.role = k == 0 ? "prefill" : "decode";
    const std::string where = sc.file + ": /disaggregation/" + pool.role;
    // The pool's GPU and its free nodes: a topology of those nodes alone.
    plan::Topology topo = sc.topology;
    if (!o.gpu.empty()) {
      const plan::GpuSpec* g = sc.topology.gpu_type(o.gpu);
      if (g == nullptr)
        return invalid_argument(where + "/gpu: topology " + sc.topology.name + " has no " + o.gpu +
                                " nodes (its GPUs: " + sc.topology.gpu_types() +
                                "; add them with \"node_gpus\")");
      topo.gpu = *g;
    }
    std::vector<int> nodes;
    for (int n : sc.topology.nodes_with(topo.gpu.name))
      if (!used[static_cast<std::size_t>(n)]) nodes.push_back(n);
    pool.gpu = topo.gpu;
    pool.plan = d.pool_plan(sc.plan, k);
    auto opts = std::make_shared<sched::SchedulerOptions>(sc.scheduler);
    if (o.max_num_seqs > 0) opts->max_num_seqs = o.max_num_seqs;
    if (o.max_num_batched_tokens > 0) opts->max_num_batched_tokens = o.max_num_batched_tokens;
    if (pool.plan.micro_batch > 0 && pool.plan.pipeline_parallel > 1)
      opts->max_seqs_per_step = pool.plan.micro_batch;
    auto fit = plan::check_plan(sc.model, sc.quantization, topo, pool.plan, sc.memory,
                                opts->max_num_batched_tokens, sc.max_model_len);
    if (!fit.ok()) return invalid_argument(where + ": " + fit.status().message());
    if (!fit->fits) return invalid_argument(where + ": " + fit->verdict);
    pool.fit = *fit;
    opts->kv_bytes_per_token = pool.fit.kv_bytes_per_token;  // per GPU: swap traffic
    pool.scheduler = opts;
    pool.kv_blocks = static_cast<int>(pool.fit.kv_tokens / sc.scheduler.block_size);
    pool.cost = make_cost(sc, pool.plan, pool.gpu);
    if (nodes.empty())
      return invalid_argument(where + fmt::format(": {} replicas of {} GPUs find no {} node left "
                                                  "on topology {}",
                                                  pool.plan.replicas, pool.plan.gpus_per_replica(),
                                                  topo.gpu.name, sc.topology.name));
    topo.nodes = static_cast<int>(nodes.size());
    topo.node_gpus.clear();
    auto placed = plan::place(pool.plan, topo);
    if (!placed.ok())
      return invalid_argument(where + ": on the " + std::to_string(nodes.size()) + " free " +
                              topo.gpu.name + " nodes: " + placed.status().message());
    for (plan::ReplicaPlacement& pl : *placed) {
      pl.replica = static_cast<ReplicaId>(c->placements.size());
      for (auto& stage : pl.devices)
        for (DeviceId& g : stage) {
          const int n = nodes[static_cast<std::size_t>(g / gpn)];
          used[static_cast<std::size_t>(n)] = 1;
          g = n * gpn + g % gpn;
        }
      c->placements.push_back(std::move(pl));
      c->pool_of.push_back(k);
    }
    c->pools.push_back(std::move(pool));
  }
  c->fit = c->pools[0].fit;
  return ok_status();
}

// The replicas' places: the disaggregated pools on their own GPU types, or the deployment's
// plan checked and placed on the topology.
Status place_replicas(const scenario::Scenario& sc, SimCluster* c) {
  const bool pools = sc.cluster.disaggregation.pools_set();
  if (!sc.topology.node_gpus.empty() && !pools)
    return invalid_argument(sc.file + ": /topology/node_gpus: topology " + sc.topology.name +
                            " mixes GPU types; only disaggregated pools that name their \"gpu\" "
                            "run on the other types (docs/cluster.md)");
  if (pools) return build_pools(sc, c);
  PRIMA_ASSIGN_OR_RETURN(c->fit, check_scenario_plan(sc));
  PRIMA_ASSIGN_OR_RETURN(c->placements, plan::place(sc.plan, sc.topology));
  return ok_status();
}

// The scenario's cluster options, checked against the deployment. Autoscaling: every replica
// the autoscaler may start needs its own GPUs; as many are placed as the topology holds
// (capped at max_replicas), and the first sc.plan.replicas start up.
Status take_cluster_options(const scenario::Scenario& sc, SimCluster* c) {
  c->copts = sc.cluster;
  cluster::ClusterOptions& copts = c->copts;
  if (copts.disaggregation.enabled() &&
      copts.disaggregation.prefill_replicas + copts.disaggregation.decode_replicas !=
          sc.plan.replicas)
    return invalid_argument(fmt::format(
        "{}: /disaggregation: prefill_replicas ({}) + decode_replicas ({}) must equal the "
        "deployment's replicas ({})",
        sc.file, copts.disaggregation.prefill_replicas, copts.disaggregation.decode_replicas,
        sc.plan.replicas));
  if (!copts.autoscaler.enabled) return ok_status();
  auto& as = copts.autoscaler;
  const int fit_max = sc.topology.total_gpus() / std::max(1, sc.plan.gpus_per_replica());
  if (as.max_replicas > fit_max) {
    fmt::print(stderr,
               "{}: /autoscaler/max_replicas: {} replicas of {} GPUs do not fit on the {} "
               "GPUs of topology {}; capped at {}\n",
               sc.file, as.max_replicas, sc.plan.gpus_per_replica(), sc.topology.total_gpus(),
               sc.topology.name, fit_max);
    c->max_capped_from = as.max_replicas;
    as.max_replicas = fit_max;
    as.min_replicas = std::min(as.min_replicas, fit_max);
  }
  plan::ParallelPlan all = sc.plan;
  all.replicas = std::max(as.max_replicas, sc.plan.replicas);
  PRIMA_ASSIGN_OR_RETURN(c->pool, plan::place(all, sc.topology));
  c->placements.assign(c->pool.begin(), c->pool.begin() + sc.plan.replicas);
  return ok_status();
}

// The runtime on the platform's clock, the fault timeline (none: no injector, and the fast
// paths stay as they are; made before the executors and the fabric, which borrow it), the
// cost model, the speed-ups that apply (sim_strategy.h; lone flows need the platform's link
// occupancy before the executors are made), and the KV blocks and shared KV tiers.
SimScenarioFacts make_runtime(const scenario::Scenario& sc, const SimOptions& asked,
                              SimCluster* c) {
  c->rt = std::make_unique<SimRuntime>();
  if (!sc.faults.empty())
    c->injector =
        std::make_unique<FaultInjector>(c->platform.get(), c->rt.get(), sc.faults, sc.env, sc.seed);
  c->cost = make_cost(sc, sc.plan, sc.topology.gpu);
  SimScenarioFacts facts;
  facts.fault_timeline = c->injector != nullptr;
  facts.autoscaler = c->copts.autoscaler.enabled;
  facts.disaggregation = c->copts.disaggregation.enabled();
  facts.lone_flow_platform = c->platform->supports_lone_flows();
  c->speedups = choose_speedups(asked, facts);
  if (c->speedups.lone_flows) c->platform->enable_lone_flows();
  c->kv_blocks = static_cast<int>(c->fit.kv_tokens / sc.scheduler.block_size);
  // KV offload tiers: a shared one (remote storage) counts blocks of the deployment's shape
  // (with pools, the prefill pool's, which reads it most); the others are made per replica.
  for (std::size_t i = 0; i < sc.kv_tiers.size(); ++i)
    c->shared_tiers.push_back(sc.kv_tiers[i].shared
                                  ? std::make_shared<kv::KvTier>(c->tier_spec(
                                        i, c->fit, c->pools.empty() ? sc.plan : c->pools[0].plan))
                                  : nullptr);
  return facts;
}

// Why replica `pl` cannot start ("" when it can): a weight shard corrupted on one of its GPUs
// (seed 004: the service does not come up; the checksum names the shard).
std::string load_error(const scenario::Scenario& sc, const plan::ReplicaPlacement& pl) {
  for (const auto& f : sc.faults)
    for (const auto& st : pl.devices)
      for (DeviceId d : st)
        if (f.type == faults::FaultType::kCorruptedShard && f.target.index == d)
          return fmt::format(
              "replica {} did not start: the weight shard of gpu {} failed its checksum (sha256 "
              "mismatch; corrupted_shard fault)",
              pl.replica, d);
  return "";
}

// An executor for every replica that starts; one that does not keeps its GPUs idle.
std::vector<cluster::ReplicaSetup> start_replicas(const scenario::Scenario& sc, SimCluster* c) {
  std::vector<cluster::ReplicaSetup> setups;
  for (std::size_t i = 0; i < c->placements.size(); ++i) {
    const auto& pl = c->placements[i];
    std::string bad = load_error(sc, pl);
    if (!bad.empty()) {
      fmt::print(stderr, "{}: {}\n", sc.file, bad);
      c->load_errors.push_back(std::move(bad));
      continue;
    }
    c->slot_of_replica.push_back(static_cast<int>(i));
    setups.push_back(c->make_setup(pl, c->pools.empty() ? -1 : c->pool_of[i]));
  }
  return setups;
}

// The recorder over every GPU of the deployment (or its pools) and the serving engine.
void make_engine(const scenario::Scenario& sc, const std::vector<cluster::ReplicaSetup>& setups,
                 SimCluster* c) {
  int gpus = sc.plan.gpus_per_replica() * sc.plan.replicas;
  if (!c->pools.empty()) {
    gpus = 0;
    for (const auto& p : c->pools) gpus += p.plan.gpus_per_replica() * p.plan.replicas;
  }
  c->recorder = std::make_unique<metrics::Recorder>(gpus);
  cluster::EngineOptions eopts;
  eopts.scheduler = sc.scheduler;
  eopts.scheduler.kv_bytes_per_token = c->fit.kv_bytes_per_token;  // per GPU: swap traffic
  eopts.routing = sc.routing;
  eopts.max_model_len = sc.max_model_len;
  eopts.cluster = c->copts;
  eopts.use_cluster_router = true;
  eopts.kv_bytes_per_token = sc.model.kv_bytes_per_token(sc.memory.kv_bytes_per_element);
  c->engine =
      std::make_unique<cluster::ServingEngine>(c->rt.get(), eopts, setups, c->recorder.get());
}

// How the engine gets replicas at run time: the autoscaler takes a free placement (a fresh
// executor; idle ones stay) and gives it back; every start (and failover's restart) loads the
// weights, each GPU reading its shard from the storage host, all at once (they contend).
cluster::ReplicaProvider replica_provider(SimCluster* cl) {
  cluster::ReplicaProvider prov;
  const bool autoscaler = cl->copts.autoscaler.enabled;
  if (autoscaler)
    prov.create = [cl](ReplicaId id) -> std::optional<cluster::ReplicaSetup> {
      if (cl->free_slots.empty()) return std::nullopt;
      const int slot = cl->free_slots.back();
      cl->free_slots.pop_back();
      if (static_cast<std::size_t>(id) >= cl->slot_of_replica.size())
        cl->slot_of_replica.resize(id + 1, -1);
      cl->slot_of_replica[id] = slot;
      return cl->make_setup(cl->pool[slot]);
    };
  prov.load = [cl, weight_bytes = cl->fit.weight_bytes](
                  ReplicaId id, const cluster::ReplicaSetup& rs, std::function<void(Status)> done) {
    const double bytes =
        cl->pools.empty()
            ? weight_bytes
            : cl->pools[static_cast<std::size_t>(
                            cl->pool_of[static_cast<std::size_t>(cl->slot_of_replica[id])])]
                  .fit.weight_bytes;
    auto left = std::make_shared<int>(0);
    auto first_error = std::make_shared<Status>();
    for (const auto& st : rs.devices) *left += static_cast<int>(st.size());
    if (*left == 0) return done(ok_status());
    for (const auto& st : rs.devices)
      for (DeviceId d : st)
        cl->fabric->load_from_storage(d, bytes, [=](Status s) {
          if (!s.ok() && first_error->ok()) *first_error = s;
          if (--*left == 0) done(*first_error);
        });
  };
  if (autoscaler)
    prov.release = [cl](ReplicaId id, const cluster::ReplicaSetup&) {
      cl->free_slots.push_back(cl->slot_of_replica[id]);
    };
  return prov;
}

// Only policies that move bytes get a fabric (it turns off the exclusive-link shortcut):
// autoscaling and failover reload weights from storage, disaggregation moves KV.
void connect_fabric(const SimScenarioFacts& facts, SimCluster* c) {
  if (facts.fabric()) {
    c->fabric = std::make_unique<SimFabric>(c->platform.get(), c->rt.get());
    if (c->injector) c->fabric->set_fault_injector(c->injector.get());
    c->engine->set_fabric(c->fabric.get());
  }
  for (int i = static_cast<int>(c->pool.size()) - 1; i >= static_cast<int>(c->placements.size());
       --i)
    c->free_slots.push_back(i);  // free placements (indices into pool)
  if (c->fabric && (c->copts.autoscaler.enabled || c->injector))
    c->engine->set_replica_provider(replica_provider(c));
}

}  // namespace

Result<std::unique_ptr<SimCluster>> build_sim_cluster(const scenario::Scenario& sc) {
  auto c = std::make_unique<SimCluster>();
  c->sc = &sc;
  PRIMA_RETURN_IF_ERROR(place_replicas(sc, c.get()));
  SimOptions asked;
  PRIMA_RETURN_IF_ERROR(config::to_status([&] { asked = read_sim_options(sc); }));
  PRIMA_ASSIGN_OR_RETURN(c->platform, SimPlatform::create(sc.topology));
  PRIMA_RETURN_IF_ERROR(take_cluster_options(sc, c.get()));
  const SimScenarioFacts facts = make_runtime(sc, asked, c.get());
  const std::vector<cluster::ReplicaSetup> setups = start_replicas(sc, c.get());
  make_engine(sc, setups, c.get());
  connect_fabric(facts, c.get());
  return c;
}

}  // namespace prima::sim
