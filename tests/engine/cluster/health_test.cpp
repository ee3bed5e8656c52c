// Health checks and failover on the manual clock: a failed replica's requests complete on
// another, bounded re-routes, the engine-level pending queue, probes (timeouts, late
// answers), recovery with a weight reload, min_available, failures during warm-up and in
// disaggregated mode, and the invariant: every request ends exactly once.
#include <gtest/gtest.h>

#include <map>
#include <memory>

#include "engine/cluster/serving_engine.h"
#include "tests/support/faulty_executor.h"

namespace prima::cluster {
namespace {

using prima::testing::FaultyExecutor;
using prima::testing::ManualRuntime;

Request req(Time t, int prompt, int out, Priority p = Priority::kNormal) {
  Request r;
  r.arrival_s = t;
  r.prompt_tokens = prompt;
  r.max_output_tokens = out;
  r.priority = p;
  return r;
}

// n replicas, each on its own FaultyExecutor (10 ms per step); counts every on_end.
struct Cluster {
  ManualRuntime rt;
  std::vector<std::unique_ptr<FaultyExecutor>> ex;
  metrics::Recorder rec;
  std::unique_ptr<ServingEngine> eng;
  std::map<RequestId, int> ends;
  std::map<RequestId, ReplicaId> ended_on;

  explicit Cluster(int n, EngineOptions o = {}, int kv_blocks = 1000) {
    std::vector<ReplicaSetup> setups;
    for (int i = 0; i < n; ++i) {
      ex.push_back(std::make_unique<FaultyExecutor>(
          &rt, [](const StepBatch&) { return 0.01; }, "gpu" + std::to_string(i)));
      ReplicaSetup rs;
      rs.executor = ex.back().get();
      rs.num_kv_blocks = kv_blocks;
      rs.devices = {{DeviceId(i)}};
      setups.push_back(rs);
    }
    eng = std::make_unique<ServingEngine>(&rt, o, setups, &rec);
    eng->on_end = [this](const Sequence& s) {
      ++ends[s.req.id];
      ended_on[s.req.id] = s.replica;
    };
  }
  // Every submitted request ended exactly once and nothing is left anywhere.
  void expect_conserved(std::int64_t submitted) {
    EXPECT_EQ(rec.submitted(), submitted);
    EXPECT_EQ(rec.count(Outcome::kCompleted) + rec.count(Outcome::kRejected) +
                  rec.count(Outcome::kFailed),
              submitted);
    EXPECT_EQ(static_cast<std::int64_t>(ends.size()), submitted);
    for (const auto& [id, n] : ends) EXPECT_EQ(n, 1) << "request " << id;
    EXPECT_EQ(eng->in_system(), 0);
    EXPECT_EQ(eng->pending(), 0);
    for (const auto& r : eng->replicas()) {
      EXPECT_EQ(r->kv().used_blocks(), 0) << "replica " << r->id();
      EXPECT_EQ(r->outstanding_tokens(), 0) << "replica " << r->id();
    }
  }
};

TEST(Health, FailedReplicaRequestsCompleteOnAnother) {
  Cluster c(2);
  for (int i = 0; i < 10; ++i) c.eng->submit(req(0, 100, 20));  // round robin: 5 each
  c.rt.advance_to(0.05);
  c.ex[0]->set_down(true);
  c.rt.advance_to(3);
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kUnhealthy);
  EXPECT_EQ(c.ex[0]->failed(), 1);  // paused: no spinning on a dead device
  EXPECT_EQ(c.rec.count(Outcome::kCompleted), 10);
  for (const auto& [id, r] : c.ended_on) EXPECT_EQ(r, 1) << "request " << id;
  const ClusterCounters& k = c.eng->counters();
  EXPECT_EQ(k.replica_failures, 1);
  EXPECT_EQ(k.step_failures, 1);
  EXPECT_EQ(k.reroutes, 5);
  EXPECT_EQ(k.retries_exhausted, 0);
  c.expect_conserved(10);
  // Probes every 5 s fail while the device is down; then it comes back.
  c.rt.advance_to(16);
  EXPECT_EQ(k.probes, 3);
  EXPECT_EQ(k.probes_failed, 3);
  c.ex[0]->set_down(false);
  c.rt.advance_to(21);
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kActive);
  EXPECT_EQ(k.replica_recoveries, 1);
  EXPECT_EQ(c.rt.pending(), 0u);  // no probe timer once every replica is healthy
  c.eng->submit(req(c.rt.now(), 10, 2));
  c.eng->submit(req(c.rt.now(), 10, 2));
  c.rt.run_until_idle();
  EXPECT_EQ(c.rec.count(Outcome::kCompleted), 12);
  c.expect_conserved(12);
}

TEST(Health, FaultFreeRunAddsNoEvents) {
  Cluster c(2);
  for (int i = 0; i < 6; ++i) c.eng->submit(req(0, 50, 5));
  c.rt.run_until_idle();
  EXPECT_EQ(c.rt.pending(), 0u);
  const ClusterCounters& k = c.eng->counters();
  EXPECT_EQ(k.probes + k.replica_failures + k.reroutes + k.step_failures, 0);
  c.expect_conserved(6);
}

TEST(Health, RetriesExhaustedFailWithTheReason) {
  EngineOptions o;
  o.cluster.health.max_request_retries = 1;
  Cluster c(2, o);
  c.ex[0]->set_down(true);
  c.ex[1]->set_down(true);
  c.eng->submit(req(0, 100, 5));  // round robin: replica 0, then re-routed to replica 1
  c.rt.advance_to(1);
  ASSERT_EQ(c.rec.count(Outcome::kFailed), 1);
  const auto& r = c.rec.records()[0];
  EXPECT_NE(r.reason.find("replica 1 failed (gpu1 is down)"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("max_request_retries 1"), std::string::npos) << r.reason;
  EXPECT_EQ(c.eng->counters().retries_exhausted, 1);
  EXPECT_EQ(c.eng->counters().reroutes, 1);
  c.expect_conserved(1);
}

TEST(Health, AllDownThenOneRecoversServesThePending) {
  Cluster c(2);
  c.ex[0]->set_down(true);
  c.ex[1]->set_down(true);
  for (int i = 0; i < 4; ++i) c.eng->submit(req(0, 100, 5));
  c.rt.advance_to(1);
  EXPECT_EQ(c.eng->count(ReplicaState::kUnhealthy), 2);
  EXPECT_EQ(c.eng->pending(), 4);
  // New requests wait too (not rejected): replicas will come back. High priority first.
  c.eng->submit(req(1, 100, 5));
  c.eng->submit(req(1, 100, 5, Priority::kHigh));
  EXPECT_EQ(c.eng->pending(), 6);
  EXPECT_EQ(c.eng->state().pending, 6);
  EXPECT_EQ(c.rec.count(Outcome::kRejected), 0);
  c.ex[1]->set_down(false);
  c.rt.advance_to(5.5);  // first probe at 5 s: replica 1 is back
  EXPECT_EQ(c.eng->replica_state(1), ReplicaState::kActive);
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kUnhealthy);
  EXPECT_EQ(c.eng->pending(), 0);
  c.rt.advance_to(10);
  EXPECT_EQ(c.rec.count(Outcome::kCompleted), 6);
  for (const auto& rr : c.rec.records()) {
    EXPECT_EQ(rr.replica, 1);
    if (rr.priority == Priority::kHigh) {
      EXPECT_DOUBLE_EQ(rr.first_scheduled_s, 5);
    }
  }
  c.expect_conserved(6);
}

TEST(Health, PendingRequestsTimeOut) {
  EngineOptions o;
  o.cluster.health.pending_timeout_s = 3;
  Cluster c(1, o);
  c.ex[0]->set_down(true);
  c.eng->submit(req(0, 100, 5));
  c.rt.advance_to(2);
  c.eng->submit(req(2, 100, 5));
  c.rt.advance_to(4);
  EXPECT_EQ(c.rec.count(Outcome::kFailed), 1);
  c.rt.advance_to(6);
  ASSERT_EQ(c.rec.count(Outcome::kFailed), 2);
  EXPECT_NE(c.rec.records()[0].reason.find("pending_timeout"), std::string::npos)
      << c.rec.records()[0].reason;
  EXPECT_DOUBLE_EQ(c.rec.records()[1].finish_s, 5);
  c.expect_conserved(2);
}

TEST(Health, NoReplicaAtAllStillRejects) {
  Cluster c(0);
  c.eng->submit(req(0, 100, 5));
  EXPECT_EQ(c.rec.count(Outcome::kRejected), 1);
  c.expect_conserved(1);
}

TEST(Health, UnansweredProbesTimeOutAndLateAnswersAreIgnored) {
  EngineOptions o;
  o.cluster.health.probe_timeout_s = 2;
  o.cluster.health.probes_to_mark_up = 2;
  Cluster c(2, o);
  c.ex[0]->fail_next(1);
  c.ex[0]->health = FaultyExecutor::Health::kNever;
  c.eng->submit(req(0, 100, 5));
  c.rt.advance_to(11);  // probes at 5 and 10 s; the first timed out at 7 s
  EXPECT_EQ(c.eng->counters().probes, 2);
  EXPECT_EQ(c.eng->counters().probes_failed, 1);
  c.ex[0]->health = FaultyExecutor::Health::kOk;
  c.ex[0]->probe_delay_s = 3;  // answers ok, but after the timeout: ignored
  c.rt.advance_to(33);
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kUnhealthy);
  EXPECT_EQ(c.eng->counters().probes, 6);
  EXPECT_EQ(c.eng->counters().probes_failed, 6);
  c.ex[0]->probe_delay_s = 0.5;
  c.rt.advance_to(36);
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kUnhealthy);  // one good probe of two
  c.rt.advance_to(41);
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kActive);
  EXPECT_EQ(c.eng->counters().replica_recoveries, 1);
  c.rt.run_until_idle();
  c.expect_conserved(1);
}

TEST(Health, RecoveryReloadsWeightsThroughTheProvider) {
  EngineOptions o;
  o.cluster.health.restart_s = 0;  // reload at once (restart delay: RestartPrecedesTheReload)
  Cluster c(2, o);
  std::vector<ReplicaId> loads;
  bool fail_load = true;
  ReplicaProvider p;
  p.load = [&](ReplicaId id, const ReplicaSetup&, std::function<void(Status)> done) {
    loads.push_back(id);
    Status st = fail_load ? unavailable("storage unreachable") : ok_status();
    fail_load = false;
    c.rt.at(c.rt.now() + 4, [done, st] { done(st); });
  };
  c.eng->set_replica_provider(p);
  c.ex[0]->fail_next(1);
  c.eng->submit(req(0, 100, 5));
  c.rt.advance_to(5.5);  // probe ok at 5 s: reloading
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kLoading);
  EXPECT_EQ(c.eng->state().replicas_loading, 1);
  c.rt.advance_to(9.5);  // the load failed at 9 s: unhealthy again, probed again
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kUnhealthy);
  EXPECT_EQ(c.eng->counters().load_failures, 1);
  c.rt.advance_to(14.5);  // probe at 14 s, loading until 18 s
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kLoading);
  c.rt.advance_to(18.5);
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kActive);
  EXPECT_EQ(loads, (std::vector<ReplicaId>{0, 0}));
  EXPECT_EQ(c.eng->counters().replica_recoveries, 1);
  c.rt.run_until_idle();
  c.expect_conserved(1);
}

TEST(Health, RestartPrecedesTheReload) {
  EngineOptions o;
  o.cluster.health.restart_s = 30;
  Cluster c(2, o);
  std::vector<double> load_at;
  ReplicaProvider p;
  p.load = [&](ReplicaId, const ReplicaSetup&, std::function<void(Status)> done) {
    load_at.push_back(c.rt.now());
    c.rt.at(c.rt.now() + 4, [done] { done(ok_status()); });
  };
  c.eng->set_replica_provider(p);
  c.ex[0]->fail_next(1);
  c.eng->submit(req(0, 100, 5));
  c.rt.advance_to(5.5);  // probe ok at 5 s: restarting (state kLoading) until 35 s
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kLoading);
  EXPECT_TRUE(load_at.empty());
  c.rt.advance_to(36);
  ASSERT_EQ(load_at.size(), 1u);
  EXPECT_DOUBLE_EQ(load_at[0], 35.0);
  c.rt.advance_to(39.5);
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kActive);
  c.rt.run_until_idle();
  c.expect_conserved(1);
}

// A reload that fails after the run ended (stop()) must not start probing again: a replica
// that can never load (corrupted weights) would otherwise keep the simulation alive forever.
TEST(Health, StopIsFinalEvenForAReloadInFlight) {
  Cluster c(2);
  ReplicaProvider p;
  p.load = [&](ReplicaId, const ReplicaSetup&, std::function<void(Status)> done) {
    c.rt.at(c.rt.now() + 4, [done] { done(internal_error("checksum mismatch")); });
  };
  c.eng->set_replica_provider(p);
  c.ex[0]->fail_next(1);
  c.eng->submit(req(0, 100, 5));
  c.rt.advance_to(5.5);  // probe ok at 5 s: reloading until 9 s
  ASSERT_EQ(c.eng->replica_state(0), ReplicaState::kLoading);
  c.eng->stop();
  EXPECT_LT(c.rt.run_until_idle(), 1000);  // ends: no probe cycle after the failed reload
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kUnhealthy);
  c.expect_conserved(1);
}

TEST(Health, MinAvailableBlocksVoluntaryDrainsAndCountsTimeBelow) {
  EngineOptions o;
  o.cluster.health.min_available = 2;
  Cluster c(3, o);
  EXPECT_TRUE(c.eng->drain_replica(2));
  EXPECT_FALSE(c.eng->drain_replica(1));  // would leave 1 < min_available
  c.rt.run_until_idle();
  EXPECT_EQ(c.eng->replica_state(2), ReplicaState::kRemoved);
  // A failure may go below it: the time is counted.
  c.ex[0]->fail_next(1);
  c.eng->submit(req(0, 100, 5));
  c.rt.advance_to(4);
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kUnhealthy);
  EXPECT_NEAR(c.eng->below_min_available_seconds(), 4, 1e-9);
  c.rt.advance_to(7);  // recovered at 5 s
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kActive);
  EXPECT_NEAR(c.eng->below_min_available_seconds(), 5, 1e-9);
  c.eng->stop();
  EXPECT_NEAR(c.eng->counters().below_min_available_s, 5, 1e-9);
  c.expect_conserved(1);
}

int autoscaler_drains(int min_available) {
  EngineOptions o;
  o.cluster.health.min_available = min_available;
  o.cluster.autoscaler.enabled = true;
  o.cluster.autoscaler.interval_s = 1;
  o.cluster.autoscaler.min_replicas = 1;
  o.cluster.autoscaler.scale_down_stabilization_s = 0;
  Cluster c(3, o);
  c.eng->start();
  c.rt.advance_to(3.5);  // idle: the autoscaler wants 1 replica
  c.eng->stop();
  return static_cast<int>(c.eng->counters().scale_downs);
}

TEST(Health, MinAvailableBlocksAutoscalerDrains) {
  EXPECT_EQ(autoscaler_drains(0), 2);
  EXPECT_EQ(autoscaler_drains(2), 1);
  EXPECT_EQ(autoscaler_drains(3), 0);
}

TEST(Health, DisabledKeepsTheSchedulerStepRetries) {
  EngineOptions o;
  o.cluster.health.enabled = false;
  o.scheduler.max_step_retries = 2;
  Cluster c(2, o);
  c.ex[0]->set_down(true);
  c.eng->submit(req(0, 100, 5));
  c.rt.run_until_idle();
  ASSERT_EQ(c.rec.count(Outcome::kFailed), 1);
  EXPECT_NE(c.rec.records()[0].reason.find("step failed 3 times"), std::string::npos);
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kActive);
  EXPECT_EQ(c.eng->counters().replica_failures, 0);
  EXPECT_EQ(c.eng->counters().step_failures, 3);
  c.expect_conserved(1);
}

TEST(Health, FailuresToMarkDownCountsConsecutiveFailures) {
  EngineOptions o;
  o.cluster.health.failures_to_mark_down = 3;
  o.scheduler.max_step_retries = 10;
  Cluster c(2, o);
  c.ex[0]->fail_next(2);  // two failures, then fine: stays up
  c.eng->submit(req(0, 100, 5));
  c.rt.run_until_idle();
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kActive);
  EXPECT_EQ(c.rec.count(Outcome::kCompleted), 1);
  c.ex[0]->set_down(true);
  c.eng->submit(req(c.rt.now(), 100, 5));  // replica 1 by round robin
  c.eng->submit(req(c.rt.now(), 100, 5));  // replica 0: fails three times, then moves
  c.rt.advance_to(c.rt.now() + 2);
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kUnhealthy);
  EXPECT_EQ(c.ex[0]->failed(), 2 + 3);
  EXPECT_EQ(c.rec.count(Outcome::kCompleted), 3);
  c.expect_conserved(3);
}

TEST(Health, WarmupSequencesOnAFailedReplicaAreDropped) {
  EngineOptions o;
  o.cluster.warmup.requests = 3;
  Cluster c(2, o);
  c.ex[0]->set_down(true);
  c.eng->start();
  c.eng->submit(req(0, 100, 5));
  c.eng->submit(req(0, 100, 5));
  c.rt.advance_to(2);
  EXPECT_EQ(c.eng->replica_state(0), ReplicaState::kUnhealthy);
  EXPECT_EQ(c.rec.count(Outcome::kCompleted), 2);
  c.expect_conserved(2);
  c.eng->stop();
  EXPECT_EQ(c.rt.pending(), 0u);
}

TEST(Health, DisaggregatedPrefillAndDecodeFailures) {
  EngineOptions o;
  o.cluster.disaggregation.prefill_replicas = 2;
  o.cluster.disaggregation.decode_replicas = 2;
  Cluster c(4, o);          // no fabric: hand-offs complete at once
  c.ex[0]->set_down(true);  // a prefill replica
  for (int i = 0; i < 8; ++i) c.eng->submit(req(0, 100, 30));
  c.rt.advance_to(0.1);
  c.ex[2]->set_down(true);  // a decode replica, while decoding
  c.rt.advance_to(5);
  EXPECT_EQ(c.eng->count(ReplicaState::kUnhealthy), 2);
  EXPECT_EQ(c.rec.count(Outcome::kCompleted), 8);
  for (const auto& rr : c.rec.records()) {
    EXPECT_EQ(rr.replica, 3);  // every request finished on the healthy decode replica
    EXPECT_EQ(rr.output_tokens, 30);
  }
  c.expect_conserved(8);
}

TEST(Health, WholeDecodePoolDownDecodesOnThePrefillReplica) {
  EngineOptions o;
  o.cluster.disaggregation.prefill_replicas = 1;
  o.cluster.disaggregation.decode_replicas = 1;
  Cluster c(2, o);
  c.ex[1]->set_down(true);
  c.eng->submit(req(0, 100, 10));
  c.eng->submit(req(0, 100, 10));
  c.rt.advance_to(2);
  EXPECT_EQ(c.eng->replica_state(1), ReplicaState::kUnhealthy);
  ASSERT_EQ(c.rec.count(Outcome::kCompleted), 2);
  for (const auto& rr : c.rec.records()) {
    EXPECT_EQ(rr.replica, 0);
    EXPECT_EQ(rr.output_tokens, 10);
  }
  c.expect_conserved(2);
}

TEST(Health, FailAllEndsPendingRequests) {
  Cluster c(1);
  c.ex[0]->set_down(true);
  for (int i = 0; i < 3; ++i) c.eng->submit(req(0, 100, 5));
  c.rt.advance_to(1);
  EXPECT_EQ(c.eng->pending(), 3);
  c.eng->fail_all("drain limit");
  EXPECT_EQ(c.rec.count(Outcome::kFailed), 3);
  EXPECT_EQ(c.rt.pending(), 0u);  // probe and pending timers cancelled
  c.expect_conserved(3);
}

// The drain limit of a simulation ends the requests while a step is still in flight: the
// step's end must not touch them (they are gone), and nothing new is launched.
TEST(Health, FailAllWithAStepInFlightDropsTheStep) {
  Cluster c(1);
  for (int i = 0; i < 3; ++i) c.eng->submit(req(0, 100, 50));
  c.rt.advance_to(0.015);  // the second 10 ms step is in flight
  ASSERT_EQ(c.eng->replicas()[0]->inflight_steps(), 1);
  const auto launched = c.ex[0]->launched();
  c.eng->fail_all("drain limit");
  c.rt.advance_to(1);
  EXPECT_EQ(c.rec.count(Outcome::kFailed), 3);
  EXPECT_EQ(c.rec.count(Outcome::kCompleted), 0);
  EXPECT_EQ(c.eng->replicas()[0]->inflight_steps(), 0);
  EXPECT_EQ(c.ex[0]->launched(), launched);
  for (const auto& [id, n] : c.ends) EXPECT_EQ(n, 1) << "request " << id;
}

}  // namespace
}  // namespace prima::cluster
