// Load migration on the manual clock: a "hot" replica (steps 4x slower, a throttled GPU)
// with round-robin routing piles up work; migration moves waiting sequences off it and
// speed-weighted routing sends it less new work.
#include "engine/cluster/load_migration.h"

#include <gtest/gtest.h>

#include <memory>

#include "engine/cluster/serving_engine.h"
#include "tests/support/faulty_executor.h"

namespace prima::cluster {
namespace {

using prima::testing::FaultyExecutor;
using prima::testing::ManualRuntime;

struct MigRun {
  double max_finish_s = 0;
  std::int64_t migrations = 0;
  int completed = 0;
  int on_hot = 0, on_cool = 0;  // requests completed on each replica
  double hot_speed = 0, cool_speed = 0;
};

// Two replicas, replica 0 four times slower. `spread_s`: arrivals spread over this time.
MigRun run(bool migrate, int n, double spread_s) {
  ManualRuntime rt;
  auto step = [](const StepBatch& p) { return 0.005 + 1e-5 * double(p.shape.tokens()); };
  FaultyExecutor hot(&rt, step, "hot"), cool(&rt, step, "cool");
  hot.slowdown = 4;
  metrics::Recorder rec;
  EngineOptions o;
  o.scheduler.max_num_seqs = 4;
  o.cluster.migration.enabled = migrate;
  o.cluster.migration.interval_s = 0.2;
  std::vector<ReplicaSetup> setups(2);
  setups[0].executor = &hot;
  setups[1].executor = &cool;
  for (auto& s : setups) s.num_kv_blocks = 1000;
  ServingEngine eng(&rt, o, setups, &rec);
  int ends = 0;
  eng.on_end = [&](const Sequence&) { ++ends; };
  for (int i = 0; i < n; ++i) {
    rt.advance_to(spread_s * i / n);
    Request r;
    r.arrival_s = rt.now();
    r.prompt_tokens = 64;
    r.max_output_tokens = 32;
    eng.submit(r);
  }
  rt.run_until_idle();
  MigRun out;
  out.max_finish_s = rec.last_finish_s();
  out.migrations = eng.counters().migrations;
  out.completed = static_cast<int>(rec.count(Outcome::kCompleted));
  for (const auto& r : rec.records()) (r.replica == 0 ? out.on_hot : out.on_cool)++;
  if (eng.migrator()) {
    out.hot_speed = eng.migrator()->speed(0);
    out.cool_speed = eng.migrator()->speed(1);
  }
  EXPECT_EQ(ends, n);
  EXPECT_EQ(eng.in_system(), 0);
  EXPECT_EQ(rt.pending(), 0u);  // the migration timer stops once the engine is empty
  return out;
}

TEST(LoadMigration, MovesWaitingWorkOffAHotReplica) {
  MigRun off = run(false, 40, 0);
  MigRun on = run(true, 40, 0);
  EXPECT_EQ(off.completed, 40);
  EXPECT_EQ(on.completed, 40);
  EXPECT_EQ(off.migrations, 0);
  EXPECT_EQ(off.on_hot, 20);  // round robin
  EXPECT_GT(on.migrations, 0);
  EXPECT_LT(on.on_hot, 20);
  EXPECT_LT(on.max_finish_s, 0.75 * off.max_finish_s)
      << "with migration " << on.max_finish_s << " s, without " << off.max_finish_s << " s";
  // Measured speeds (tokens per busy second) tell the hot replica apart.
  EXPECT_GT(on.cool_speed, 2 * on.hot_speed);
}

TEST(LoadMigration, RoutingPrefersTheFasterReplica) {
  MigRun off = run(false, 100, 5);
  MigRun on = run(true, 100, 5);
  EXPECT_EQ(off.on_hot, 50);
  EXPECT_GT(on.on_cool, 2 * on.on_hot) << on.on_cool << " vs " << on.on_hot;
  EXPECT_LT(on.max_finish_s, off.max_finish_s);
}

TEST(LoadMigration, OffByDefaultAndNoMovesWhenBalanced) {
  EXPECT_FALSE(MigrationOptions{}.enabled);
  ManualRuntime rt;
  auto step = [](const StepBatch&) { return 0.01; };
  FaultyExecutor a(&rt, step), b(&rt, step);
  metrics::Recorder rec;
  EngineOptions o;
  o.scheduler.max_num_seqs = 2;
  o.cluster.migration.enabled = true;
  o.cluster.migration.interval_s = 0.05;
  std::vector<ReplicaSetup> setups(2);
  setups[0].executor = &a;
  setups[1].executor = &b;
  for (auto& s : setups) s.num_kv_blocks = 1000;
  ServingEngine eng(&rt, o, setups, &rec);
  for (int i = 0; i < 20; ++i) {
    Request r;
    r.prompt_tokens = 32;
    r.max_output_tokens = 8;
    eng.submit(r);
  }
  rt.run_until_idle();
  EXPECT_EQ(rec.count(Outcome::kCompleted), 20);
  EXPECT_EQ(eng.counters().migrations, 0);
}

}  // namespace
}  // namespace prima::cluster
