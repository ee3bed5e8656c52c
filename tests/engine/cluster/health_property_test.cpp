// A randomized property test of failover: many random failure / recovery schedules (steps
// failing, devices down, probes failing or unanswered, weight reloads failing) on 3-4
// replicas, colocated or disaggregated, with migration on or off. Every time: each submitted
// request ends exactly once (completed, rejected or failed), nothing is left anywhere, and
// the same seed gives the same run.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <tuple>

#include "engine/cluster/serving_engine.h"
#include "tests/support/faulty_executor.h"

namespace prima::cluster {
namespace {

using prima::testing::FaultyExecutor;
using prima::testing::ManualRuntime;

using RunLog = std::vector<std::tuple<RequestId, Outcome, ReplicaId, double, std::string>>;

RunLog run_random(std::uint64_t seed, ClusterCounters* counters) {
  std::mt19937_64 rng(seed);
  auto uni = [&](double a, double b) {
    return a + (b - a) * double(rng() >> 11) * (1.0 / 9007199254740992.0);
  };
  auto pick = [&](int n) { return static_cast<int>(rng() % std::uint64_t(n)); };

  ManualRuntime rt;
  const int n = 3 + pick(2);
  std::vector<std::unique_ptr<FaultyExecutor>> ex;
  std::vector<ReplicaSetup> setups;
  for (int i = 0; i < n; ++i) {
    ex.push_back(std::make_unique<FaultyExecutor>(
        &rt, [](const StepBatch& p) { return 0.004 + 2e-5 * double(p.shape.tokens()); },
        "gpu" + std::to_string(i)));
    ex.back()->slowdown = pick(4) == 0 ? 3 : 1;
    ReplicaSetup rs;
    rs.executor = ex.back().get();
    rs.num_kv_blocks = 60 + pick(200);  // small caches: preemption and swaps
    rs.devices = {{DeviceId(i)}};
    setups.push_back(rs);
  }
  EngineOptions o;
  o.scheduler.max_num_seqs = 4 + pick(12);
  o.scheduler.max_step_retries = pick(3);
  o.scheduler.priority_scheduling = pick(2) == 0;
  auto& h = o.cluster.health;
  h.failures_to_mark_down = 1 + pick(2);
  h.probe_interval_s = uni(0.5, 3);
  h.probe_timeout_s = uni(0.2, 1);
  h.probes_to_mark_up = 1 + pick(2);
  h.max_request_retries = pick(4);
  h.pending_timeout_s = uni(5, 40);
  h.reload_weights = pick(2) == 0;
  o.cluster.migration.enabled = pick(2) == 0;
  o.cluster.migration.interval_s = uni(0.2, 2);
  o.cluster.warmup.requests = pick(3);
  if (pick(3) == 0) {
    o.cluster.disaggregation.prefill_replicas = 1 + pick(n - 2);
    o.cluster.disaggregation.decode_replicas = n - o.cluster.disaggregation.prefill_replicas;
  }
  metrics::Recorder rec;
  ServingEngine eng(&rt, o, setups, &rec);
  std::map<RequestId, int> ends;
  eng.on_end = [&](const Sequence& s) { ++ends[s.req.id]; };
  const double load_fail = uni(0, 0.5), load_s = uni(0.5, 4);
  ReplicaProvider prov;
  prov.load = [&](ReplicaId, const ReplicaSetup&, std::function<void(Status)> done) {
    Status st = uni(0, 1) < load_fail ? unavailable("storage unreachable") : ok_status();
    rt.at(rt.now() + load_s, [done, st] { done(st); });
  };
  eng.set_replica_provider(prov);
  eng.start();

  // Arrivals and faults over 60 s, in time order.
  struct Ev {
    double t;
    int kind;  // 0 arrival, 1 down, 2 up, 3 fail next steps, 4 probe mode
    int replica;
  };
  std::vector<Ev> evs;
  for (double t = 0; t < 60; t += uni(0, 0.4)) evs.push_back({t, 0, 0});
  for (int i = 0; i < n; ++i)
    for (double t = uni(0, 10); t < 60; t += uni(1, 15)) evs.push_back({t, 1 + pick(4), i});
  std::stable_sort(evs.begin(), evs.end(), [](const Ev& a, const Ev& b) { return a.t < b.t; });
  int submitted = 0;
  for (const Ev& e : evs) {
    rt.advance_to(e.t);
    FaultyExecutor& x = *ex[e.replica];
    switch (e.kind) {
      case 0: {
        Request r;
        r.arrival_s = rt.now();
        r.prompt_tokens = pick(40) == 0 ? 0 : 1 + pick(400);  // a few bad ones: rejected
        r.max_output_tokens = 1 + pick(80);
        r.priority = static_cast<Priority>(pick(3));
        eng.submit(r);
        ++submitted;
        break;
      }
      case 1:
        x.set_down(true);
        break;
      case 2:
        x.set_down(false);
        break;
      case 3:
        x.fail_next(1 + pick(3));
        break;
      case 4:
        x.health = static_cast<FaultyExecutor::Health>(pick(3));
        x.probe_delay_s = uni(0, 1.5);
        break;
    }
  }
  // Everything heals; every request must then end.
  for (auto& x : ex) {
    x->set_down(false);
    x->fail_next(0);
    x->probe_delay_s = 0;
  }
  rt.advance_to(400);
  EXPECT_EQ(eng.in_system(), 0) << "seed " << seed;
  eng.stop();
  eng.fail_all("end of test");  // nothing should be left; if something is, it still ends once
  EXPECT_EQ(rt.pending(), 0u) << "seed " << seed;

  EXPECT_EQ(rec.submitted(), submitted) << "seed " << seed;
  EXPECT_EQ(
      rec.count(Outcome::kCompleted) + rec.count(Outcome::kRejected) + rec.count(Outcome::kFailed),
      submitted)
      << "seed " << seed;
  EXPECT_EQ(static_cast<int>(ends.size()), submitted) << "seed " << seed;
  for (const auto& [id, k] : ends) EXPECT_EQ(k, 1) << "seed " << seed << " request " << id;
  for (const auto& r : eng.replicas()) {
    EXPECT_EQ(r->kv().used_blocks(), 0) << "seed " << seed << " replica " << r->id();
    EXPECT_EQ(r->outstanding_tokens(), 0) << "seed " << seed << " replica " << r->id();
  }
  for (const auto& r : rec.records()) {
    if (r.outcome == Outcome::kFailed) {
      EXPECT_FALSE(r.reason.empty()) << "seed " << seed;
    }
    if (r.outcome == Outcome::kCompleted) {
      EXPECT_GT(r.output_tokens, 0) << "seed " << seed;
    }
  }
  *counters = eng.counters();
  RunLog log;
  for (const auto& r : rec.records())
    log.emplace_back(r.id, r.outcome, r.replica, r.finish_s, r.reason);
  return log;
}

TEST(HealthProperty, RandomFailureSchedulesEndEveryRequestExactlyOnce) {
  ClusterCounters total;
  for (std::uint64_t seed = 1; seed <= 40; ++seed) {
    ClusterCounters a, b;
    RunLog first = run_random(seed, &a);
    RunLog again = run_random(seed, &b);
    EXPECT_EQ(first, again) << "seed " << seed << ": not deterministic";
    total.replica_failures += a.replica_failures;
    total.replica_recoveries += a.replica_recoveries;
    total.reroutes += a.reroutes;
    total.retries_exhausted += a.retries_exhausted;
    total.probes_failed += a.probes_failed;
    total.migrations += a.migrations;
  }
  // The schedules did exercise the failover paths.
  EXPECT_GT(total.replica_failures, 40);
  EXPECT_GT(total.replica_recoveries, 20);
  EXPECT_GT(total.reroutes, 100);
  EXPECT_GT(total.retries_exhausted, 0);
  EXPECT_GT(total.probes_failed, 0);
  EXPECT_GT(total.migrations, 0);
}

}  // namespace
}  // namespace prima::cluster
