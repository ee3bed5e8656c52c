// ServingEngine cluster policies on the manual clock: disaggregated prefill/decode hand-off,
// response cache, warm-up, run-time replicas and the autoscaler.
#include <gtest/gtest.h>

#include <memory>

#include "engine/cluster/autoscaler.h"
#include "engine/cluster/serving_engine.h"
#include "tests/support/manual_runtime.h"

namespace prima::cluster {
namespace {

using prima::testing::ManualExecutor;
using prima::testing::ManualRuntime;

Request req(Time t, int prompt, int out, std::uint64_t group = 0) {
  Request r;
  r.arrival_s = t;
  r.prompt_tokens = prompt;
  r.max_output_tokens = out;
  r.prefix_group = group;
  r.prefix_tokens = group ? prompt : 0;
  return r;
}

// Moves bytes at a fixed bandwidth on the manual clock; can fail the next transfers.
class ManualFabric : public Fabric {
 public:
  ManualFabric(ManualRuntime* rt, double bw_Bps) : rt_(rt), bw_(bw_Bps) {}
  void transfer(DeviceId from, DeviceId to, Bytes n, std::function<void(Status)> done) override {
    log.push_back({from, to});
    Status st;
    if (fail_next > 0) {
      --fail_next;
      st = unavailable("link down");
    }
    rt_->at(rt_->now() + n / bw_, [done = std::move(done), st] { done(st); });
  }
  int fail_next = 0;
  std::vector<std::pair<DeviceId, DeviceId>> log;

 private:
  ManualRuntime* rt_;
  double bw_;
};

ReplicaSetup setup(Executor* ex, DeviceId dev, int blocks = 1000) {
  ReplicaSetup rs;
  rs.executor = ex;
  rs.num_kv_blocks = blocks;
  rs.devices = {{dev}};
  return rs;
}

// --- Disaggregation ---------------------------------------------------------------------

struct PdRun {
  metrics::RequestRecord rec;
  ClusterCounters counters;
  double prefill_kv_usage = -1;
  std::vector<std::pair<DeviceId, DeviceId>> flows;
};

PdRun run_pd(bool disaggregated, int decode_replicas, int fail_transfers, int max_retries = 2) {
  ManualRuntime rt;
  ManualExecutor ex(&rt, [](const StepBatch&) { return 0.01; });
  ManualFabric fabric(&rt, 1e9);
  metrics::Recorder rec;
  EngineOptions o;
  o.kv_bytes_per_token = 1e6;  // 100 prompt tokens: 1e8 bytes, 0.1 s at 1 GB/s
  if (disaggregated) {
    o.cluster.disaggregation.prefill_replicas = 1;
    o.cluster.disaggregation.decode_replicas = decode_replicas;
    o.cluster.disaggregation.max_transfer_retries = max_retries;
  }
  std::vector<ReplicaSetup> reps = {setup(&ex, 0)};
  for (int i = 0; i < decode_replicas; ++i) reps.push_back(setup(&ex, 1 + i));
  ServingEngine eng(&rt, o, reps, &rec);
  eng.set_fabric(&fabric);
  fabric.fail_next = fail_transfers;
  eng.submit(req(0, 100, 5));
  rt.run_until_idle();
  PdRun out;
  EXPECT_EQ(rec.records().size(), 1u);
  out.rec = rec.records().at(0);
  out.counters = eng.counters();
  out.prefill_kv_usage = eng.replicas()[0]->kv().usage();
  out.flows = fabric.log;
  EXPECT_EQ(eng.in_system(), 0);
  return out;
}

TEST(Disaggregation, TransferDelayIsInTpotNotTtft) {
  PdRun colo = run_pd(false, 0, 0);
  PdRun pd = run_pd(true, 1, 0);
  ASSERT_EQ(pd.rec.outcome, Outcome::kCompleted);
  EXPECT_EQ(pd.rec.output_tokens, 5);
  EXPECT_DOUBLE_EQ(pd.rec.ttft_s(), colo.rec.ttft_s());  // first token at the prefill replica
  EXPECT_NEAR(pd.rec.tpot_s(), colo.rec.tpot_s() + 0.1 / 4, 1e-9);
  EXPECT_EQ(pd.rec.replica, 1);  // finished on the decode replica
  EXPECT_EQ(pd.counters.handoffs, 1);
  EXPECT_DOUBLE_EQ(pd.counters.handoff_bytes, 100 * 1e6);
  EXPECT_EQ(pd.prefill_kv_usage, 0);  // the prefill replica released the KV
  ASSERT_EQ(pd.flows.size(), 1u);
  EXPECT_EQ(pd.flows[0], (std::pair<DeviceId, DeviceId>{0, 1}));
}

TEST(Disaggregation, FailedTransferRetriesOnAnotherDecodeReplica) {
  PdRun pd = run_pd(true, 2, 1);
  EXPECT_EQ(pd.rec.outcome, Outcome::kCompleted);
  EXPECT_EQ(pd.counters.handoff_retries, 1);
  ASSERT_EQ(pd.flows.size(), 2u);
  EXPECT_NE(pd.flows[0].second, pd.flows[1].second);
}

TEST(Disaggregation, RetriesAreBounded) {
  PdRun pd = run_pd(true, 3, 10, 1);
  EXPECT_EQ(pd.rec.outcome, Outcome::kFailed);
  EXPECT_NE(pd.rec.reason.find("KV hand-off failed after 2 attempts"), std::string::npos)
      << pd.rec.reason;
  EXPECT_EQ(pd.counters.handoff_failures, 1);
}

TEST(Disaggregation, SingleTokenRequestsEndAtThePrefillReplica) {
  ManualRuntime rt;
  ManualExecutor ex(&rt, [](const StepBatch&) { return 0.01; });
  ManualFabric fabric(&rt, 1e9);
  metrics::Recorder rec;
  EngineOptions o;
  o.kv_bytes_per_token = 1e6;
  o.cluster.disaggregation.prefill_replicas = 1;
  o.cluster.disaggregation.decode_replicas = 1;
  ServingEngine eng(&rt, o, {setup(&ex, 0), setup(&ex, 1)}, &rec);
  eng.set_fabric(&fabric);
  eng.submit(req(0, 100, 1));
  rt.run_until_idle();
  EXPECT_EQ(rec.count(Outcome::kCompleted), 1);
  EXPECT_TRUE(fabric.log.empty());
}

// --- Response cache ---------------------------------------------------------------------

TEST(ResponseCache, RepeatedShortPromptsHitUntilTheTtl) {
  ManualRuntime rt;
  ManualExecutor ex(&rt, [](const StepBatch&) { return 0.01; });
  metrics::Recorder rec;
  EngineOptions o;
  o.cluster.response_cache.enabled = true;
  o.cluster.response_cache.ttl_s = 10;
  o.cluster.response_cache.hit_latency_s = 0.002;
  ServingEngine eng(&rt, o, {setup(&ex, 0)}, &rec);
  eng.submit(req(0, 20, 3, 5));
  rt.run_until_idle();
  const int steps = ex.launched();
  rt.advance_to(1);
  eng.submit(req(1, 20, 3, 5));  // hit
  rt.run_until_idle();
  EXPECT_EQ(ex.launched(), steps);
  rt.advance_to(2);
  eng.submit(req(2, 20, 3, 6));   // other group: miss
  eng.submit(req(2, 200, 3, 5));  // too long to be cached: no lookup
  eng.submit(req(2, 20, 3));      // no group: no lookup
  rt.run_until_idle();
  rt.advance_to(30);
  eng.submit(req(30, 20, 3, 5));  // expired: miss
  rt.run_until_idle();
  EXPECT_EQ(eng.response_cache().lookups(), 4);
  EXPECT_EQ(eng.response_cache().hits(), 1);
  ASSERT_EQ(rec.records().size(), 6u);
  const auto& hit = rec.records()[1];
  EXPECT_EQ(hit.outcome, Outcome::kCompleted);
  EXPECT_EQ(hit.reason, "response_cache");
  EXPECT_NEAR(hit.e2e_s(), 0.002, 1e-12);
  EXPECT_EQ(hit.output_tokens, 3);
  EXPECT_EQ(rec.count(Outcome::kCompleted), 6);
}

TEST(ResponseCache, CapacityEvictsTheLeastRecentlyUsed) {
  ResponseCacheOptions o;
  o.enabled = true;
  o.capacity = 2;
  ResponseCache c(o);
  Request a = req(0, 10, 1, 1), b = req(0, 10, 1, 2), d = req(0, 10, 1, 3);
  c.insert(a, 0);
  c.insert(b, 0);
  EXPECT_TRUE(c.lookup(a, 1));  // a is now the most recent
  c.insert(d, 1);               // evicts b
  EXPECT_FALSE(c.lookup(b, 1));
  EXPECT_TRUE(c.lookup(a, 1));
  EXPECT_TRUE(c.lookup(d, 1));
}

// --- Warm-up ----------------------------------------------------------------------------

TEST(Warmup, SentToEveryReplicaAndNotCounted) {
  ManualRuntime rt;
  ManualExecutor ex0(&rt, [](const StepBatch&) { return 0.01; });
  ManualExecutor ex1(&rt, [](const StepBatch&) { return 0.01; });
  metrics::Recorder rec;
  EngineOptions o;
  o.cluster.warmup.requests = 3;
  ServingEngine eng(&rt, o, {setup(&ex0, 0), setup(&ex1, 1)}, &rec);
  eng.start();
  eng.submit(req(0, 50, 4));
  rt.run_until_idle();
  EXPECT_GT(ex0.launched(), 0);
  EXPECT_GT(ex1.launched(), 0);
  EXPECT_EQ(eng.counters().warmup_requests, 6);
  EXPECT_EQ(eng.counters().warmup_completed, 6);
  EXPECT_EQ(rec.submitted(), 1);
  ASSERT_EQ(rec.records().size(), 1u);
  EXPECT_EQ(rec.records()[0].id, 1u);
  EXPECT_EQ(rec.output_tokens(), 4);  // warm-up tokens are not the workload's
}

// --- Run-time replicas and the autoscaler -----------------------------------------------

// A provider whose replicas take `load_s` to load; counts releases.
struct Pool {
  Pool(ManualRuntime* rt, double load_s, int free) : rt_(rt), load_s_(load_s), free_(free) {}
  ReplicaProvider provider() {
    ReplicaProvider p;
    p.create = [this](ReplicaId id) -> std::optional<ReplicaSetup> {
      if (free_ == 0) return std::nullopt;
      --free_;
      execs.push_back(std::make_unique<ManualExecutor>(rt_, [](const StepBatch&) { return 0.1; }));
      return setup(execs.back().get(), id);
    };
    p.load = [this](ReplicaId, const ReplicaSetup&, std::function<void(Status)> done) {
      rt_->at(rt_->now() + load_s_, [done] { done(ok_status()); });
    };
    p.release = [this](ReplicaId, const ReplicaSetup&) {
      ++free_;
      ++released;
    };
    return p;
  }
  ManualRuntime* rt_;
  double load_s_;
  int free_;
  int released = 0;
  std::vector<std::unique_ptr<ManualExecutor>> execs;
};

EngineOptions autoscaled(int min_r, int max_r) {
  EngineOptions o;
  o.use_cluster_router = true;
  o.cluster.router.policy = RoutingPolicy::kLeastOutstandingTokens;
  auto& a = o.cluster.autoscaler;
  a.enabled = true;
  a.interval_s = 1;
  a.target_utilization = 0.5;
  a.min_replicas = min_r;
  a.max_replicas = max_r;
  a.scale_down_stabilization_s = 3;
  return o;
}

TEST(Autoscaler, ScalesUpUnderLoadAfterTheWeightLoadDelay) {
  ManualRuntime rt;
  ManualExecutor ex(&rt, [](const StepBatch&) { return 0.1; });
  metrics::Recorder rec;
  Pool pool(&rt, 5.0, 3);
  ServingEngine eng(&rt, autoscaled(1, 4), {setup(&ex, 0)}, &rec);
  eng.set_replica_provider(pool.provider());
  eng.start();
  // A steady stream of long requests keeps replica 0 busy.
  auto feed = [&](int from, int to) {
    for (int k = from; k < to; ++k) {
      rt.advance_to(k * 0.1);
      eng.submit(req(k * 0.1, 100, 50));
    }
  };
  feed(0, 15);
  // At t=1 the autoscaler saw 100% busy against a 50% target: desired 2, one replica loads.
  ASSERT_GE(eng.replicas().size(), 2u);
  EXPECT_GE(eng.counters().scale_ups, 1);
  rt.advance_to(5.95);
  EXPECT_EQ(eng.replica_state(1), ReplicaState::kLoading);
  EXPECT_EQ(pool.execs[0]->launched(), 0);  // accepts nothing while loading
  rt.advance_to(6.05);
  EXPECT_EQ(eng.replica_state(1), ReplicaState::kActive);  // loaded at 1 + 5 s
  feed(61, 100);
  EXPECT_GT(pool.execs[0]->launched(), 0);
  EXPECT_LE(static_cast<int>(eng.replicas().size()), 4);
  eng.stop();
  rt.run_until_idle();
  EXPECT_EQ(rec.count(Outcome::kCompleted), 54);
}

TEST(Autoscaler, DrainsIdleReplicasOnlyAfterTheStabilizationWindow) {
  ManualRuntime rt;
  ManualExecutor a(&rt, [](const StepBatch&) { return 0.1; });
  ManualExecutor b(&rt, [](const StepBatch&) { return 0.1; });
  ManualExecutor c(&rt, [](const StepBatch&) { return 0.1; });
  metrics::Recorder rec;
  Pool pool(&rt, 1.0, 0);
  ServingEngine eng(&rt, autoscaled(1, 3), {setup(&a, 0), setup(&b, 1), setup(&c, 2)}, &rec);
  eng.set_replica_provider(pool.provider());
  eng.start();
  rt.advance_to(3.5);  // idle, but within the 3 s window of the initial count
  EXPECT_EQ(eng.count(ReplicaState::kActive), 3);
  rt.advance_to(4.5);
  EXPECT_EQ(eng.count(ReplicaState::kActive), 1);
  EXPECT_EQ(eng.count(ReplicaState::kRemoved), 2);
  EXPECT_EQ(pool.released, 2);
  EXPECT_EQ(eng.counters().scale_downs, 2);
  EXPECT_EQ(eng.counters().replicas_min_seen, 1);
  EXPECT_EQ(eng.counters().replicas_max_seen, 3);
  rt.advance_to(20);
  EXPECT_EQ(eng.count(ReplicaState::kActive), 1);  // never below min_replicas
  EXPECT_NEAR(eng.provisioned_gpu_seconds(), 3 * 4.0 + 1 * 16.0, 1e-9);
  eng.stop();
}

TEST(Autoscaler, IdleOnlyKeepsEvenlyLoadedReplicas) {
  for (bool idle_only : {false, true}) {
    ManualRuntime rt;
    ManualExecutor a(&rt, [](const StepBatch&) { return 0.05; });
    ManualExecutor b(&rt, [](const StepBatch&) { return 0.05; });
    metrics::Recorder rec;
    EngineOptions o = autoscaled(1, 2);
    o.cluster.autoscaler.target_utilization = 0.9;
    o.cluster.autoscaler.scale_down_idle_only = idle_only;
    o.cluster.router.policy = RoutingPolicy::kRoundRobin;
    ServingEngine eng(&rt, o, {setup(&a, 0), setup(&b, 1)}, &rec);
    eng.start();
    // Two short requests per second, in turn: each replica 25% busy, not idle.
    for (int k = 0; k < 200; ++k) {
      rt.advance_to(k * 0.5);
      eng.submit(req(k * 0.5, 10, 5));
    }
    EXPECT_EQ(eng.count(ReplicaState::kActive), idle_only ? 2 : 1) << idle_only;
    eng.stop();
    rt.run_until_idle();
    EXPECT_EQ(rec.count(Outcome::kCompleted), 200);
  }
}

TEST(Autoscaler, DrainingReplicaFinishesItsWorkBeforeRemoval) {
  ManualRuntime rt;
  ManualExecutor a(&rt, [](const StepBatch&) { return 0.1; });
  ManualExecutor b(&rt, [](const StepBatch&) { return 0.1; });
  metrics::Recorder rec;
  Pool pool(&rt, 1.0, 0);
  EngineOptions o;
  ServingEngine eng(&rt, o, {setup(&a, 0), setup(&b, 1)}, &rec);
  eng.set_replica_provider(pool.provider());
  eng.submit(req(0, 10, 20));  // round robin: replica 0
  eng.submit(req(0, 10, 20));  // replica 1
  rt.advance_to(0.5);
  EXPECT_TRUE(eng.drain_replica(1));
  EXPECT_EQ(eng.replica_state(1), ReplicaState::kDraining);
  eng.submit(req(0.5, 10, 5));  // only replica 0 accepts
  rt.advance_to(1.0);
  EXPECT_EQ(eng.replica_state(1), ReplicaState::kDraining);  // still decoding
  rt.run_until_idle();
  EXPECT_EQ(eng.replica_state(1), ReplicaState::kRemoved);
  EXPECT_EQ(pool.released, 1);
  EXPECT_EQ(rec.count(Outcome::kCompleted), 3);
  for (const auto& r : rec.records())
    if (r.id == 2) {
      EXPECT_EQ(r.replica, 1);
      EXPECT_EQ(r.output_tokens, 20);
    } else {
      EXPECT_EQ(r.replica, 0);
    }
}

TEST(Autoscaler, NoRequestLostWhileScalingUpAndDown) {
  ManualRuntime rt;
  ManualExecutor ex(&rt, [](const StepBatch& p) { return 0.02 + 1e-4 * p.shape.tokens(); });
  metrics::Recorder rec;
  Pool pool(&rt, 2.0, 7);
  ServingEngine eng(&rt, autoscaled(1, 8), {setup(&ex, 0)}, &rec);
  eng.set_replica_provider(pool.provider());
  eng.start();
  int submitted = 0;
  // A burst (20 s at 20 requests/s), a quiet period, another burst, then nothing.
  for (int k = 0; k < 1200; ++k) {
    const double t = k * 0.05;
    if ((t >= 20 && t < 40) || t >= 50) continue;
    rt.advance_to(t);
    eng.submit(req(t, 50 + (k * 37) % 300, 10 + (k * 11) % 40));
    ++submitted;
  }
  rt.advance_to(120);
  eng.stop();
  rt.run_until_idle();
  EXPECT_GE(eng.counters().scale_ups, 1);
  EXPECT_GE(eng.counters().scale_downs, 1);
  EXPECT_GT(eng.counters().replicas_max_seen, 1);
  EXPECT_EQ(rec.submitted(), submitted);
  EXPECT_EQ(rec.count(Outcome::kCompleted), submitted);
  EXPECT_EQ(eng.in_system(), 0);
}

}  // namespace
}  // namespace prima::cluster
