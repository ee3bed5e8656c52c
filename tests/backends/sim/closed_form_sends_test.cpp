// SimExecutor with closed-form sends (SimSpeedups::closed_form_sends): steps whose PP sends
// fold into their stages' timers are timed at launch, their sends registered ahead. Two
// replicas whose sends share NICs, pipelines full: the step results must equal those of the
// event-driven stages with lone flows (closed_form_sends off) bit for bit when the sends never
// meet, and within rounding when they do (the planned steps then continue event-driven and
// are planned again later). Each run forks (one SimGrid engine per process).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <simgrid/s4u.hpp>

#include "backends/sim/sim_executor.h"
#include "backends/sim/sim_runtime.h"
#include "tests/backends/sim/sim_test_util.h"
#include "tests/backends/sim/step_driver.h"

namespace prima::sim {
namespace {

using testing::placement;

// Three stages on three nodes: 10 ms x k of compute then a 100 MB send, 12 ms x k then 50 MB,
// 8 ms x k; k from the batch size when `vary`, else 1.
SimCostFns costs(bool vary) {
  return default_cost_fns([vary](const BatchShape& b) {
    const double k = vary ? 1.0 + 0.03 * static_cast<double>(b.num_seqs) : 1.0;
    perf::StepCost c;
    c.stages.resize(3);
    c.stages[0].compute_s = 0.010 * k;
    c.stages[0].send_bytes = 1e8;
    c.stages[1].compute_s = 0.012 * k;
    c.stages[1].send_bytes = 5e7;
    c.stages[2].compute_s = 0.008 * k;
    for (auto& s : c.stages) s.flops = s.compute_s * 1e15;
    c.overhead_s = 0.0005;
    return c;
  });
}

using Driver = testing::StepDriver;

struct Outcome {
  Driver a, b;
  std::uint64_t activities = 0;
  long conversions = 0;
  std::uint64_t materialized = 0, promoted = 0;
};

// Replica a (GPUs 0 -> 8 -> 16) starts at 0, replica b (1 -> 9 -> 17) at `offset`: their
// sends share node 0's and node 1's NICs. Each keeps 3 steps in flight for `steps` steps.
void simulate(bool closed_sends, bool vary, double offset, int steps, Outcome* out) {
  auto p = SimPlatform::create(testing::test_topology(3));
  if (!p.ok()) return;
  std::unique_ptr<SimPlatform> platform = std::move(p).value();
  if (!platform->enable_lone_flows()) return;
  SimRuntime rt;
  SimSpeedups o = unconditional_speedups();
  o.chain_stages = true;
  o.lone_flows_on_contention_links = true;
  o.closed_form_pipeline = true;
  o.lone_flows = true;
  o.closed_form_sends = closed_sends;
  SimExecutor a(platform.get(), &rt, placement({{0}, {8}, {16}}), costs(vary), o);
  SimExecutor b(platform.get(), &rt, placement({{1}, {9}, {17}}), costs(vary), o);
  out->a.ex = &a;
  out->b.ex = &b;
  out->a.total = out->b.total = steps;
  rt.at(0.0, [&] {
    for (int i = 0; i < 3; ++i) out->a.launch();
  });
  rt.at(offset, [&] {
    for (int i = 0; i < 3; ++i) out->b.launch();
  });
  platform->run();
  out->activities = a.activities_started() + b.activities_started();
  out->conversions = platform->occupancy().conversions();
  out->materialized = a.materialized() + b.materialized();
  out->promoted = a.promoted() + b.promoted();
  out->a.ex = out->b.ex = nullptr;
}

// simulate() in a child process; its results come back through a pipe.
void run(bool closed_sends, bool vary, double offset, int steps, Outcome* out) {
  int fd[2];
  ASSERT_EQ(pipe(fd), 0);
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fd[0]);
    Outcome o;
    simulate(closed_sends, vary, offset, steps, &o);
    std::vector<double> v{static_cast<double>(o.activities), static_cast<double>(o.conversions),
                          static_cast<double>(o.materialized), static_cast<double>(o.promoted)};
    for (const Driver* d : {&o.a, &o.b}) {
      v.push_back(static_cast<double>(d->results.size()));
      for (const StepResult& r : d->results) {
        v.push_back(r.status.ok() ? 1 : 0);
        v.insert(v.end(), {r.start_s, r.end_s});
        for (size_t s = 0; s < 3; ++s)
          v.push_back(s < r.stage_busy_s.size() ? r.stage_busy_s[s] : -1);
      }
    }
    const auto* bytes = reinterpret_cast<const char*>(v.data());
    size_t left = v.size() * sizeof(double);
    while (left > 0) {
      const ssize_t w = write(fd[1], bytes, left);
      if (w <= 0) _exit(1);
      bytes += w;
      left -= static_cast<size_t>(w);
    }
    _exit(0);
  }
  close(fd[1]);
  std::vector<char> buf;
  char chunk[65536];
  for (ssize_t r; (r = read(fd[0], chunk, sizeof chunk)) > 0;)
    buf.insert(buf.end(), chunk, chunk + r);
  close(fd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  std::vector<double> v(buf.size() / sizeof(double));
  std::memcpy(v.data(), buf.data(), v.size() * sizeof(double));
  ASSERT_GE(v.size(), 4u);
  size_t i = 0;
  out->activities = static_cast<std::uint64_t>(v[i++]);
  out->conversions = static_cast<long>(v[i++]);
  out->materialized = static_cast<std::uint64_t>(v[i++]);
  out->promoted = static_cast<std::uint64_t>(v[i++]);
  for (Driver* d : {&out->a, &out->b}) {
    const auto n = static_cast<size_t>(v.at(i++));
    for (size_t k = 0; k < n; ++k) {
      StepResult r;
      if (v.at(i++) != 1) r.status = unavailable("failed in the child");
      r.start_s = v.at(i++);
      r.end_s = v.at(i++);
      for (int s = 0; s < 3; ++s) r.stage_busy_s.push_back(v.at(i++));
      d->results.push_back(r);
    }
  }
}

void expect_same(const Driver& x, const Driver& y, int steps, double tol) {
  ASSERT_EQ(x.results.size(), static_cast<size_t>(steps));
  ASSERT_EQ(y.results.size(), static_cast<size_t>(steps));
  for (int i = 0; i < steps; ++i) {
    const StepResult& r = x.results[static_cast<size_t>(i)];
    const StepResult& e = y.results[static_cast<size_t>(i)];
    ASSERT_TRUE(r.status.ok()) << r.status.to_string();
    ASSERT_EQ(r.stage_busy_s.size(), 3u);
    if (tol == 0) {
      EXPECT_EQ(r.start_s, e.start_s) << "step " << i;
      EXPECT_EQ(r.end_s, e.end_s) << "step " << i;
      for (size_t s = 0; s < 3; ++s) EXPECT_EQ(r.stage_busy_s[s], e.stage_busy_s[s]) << i;
    } else {
      EXPECT_NEAR(r.start_s, e.start_s, tol) << "step " << i;
      EXPECT_NEAR(r.end_s, e.end_s, tol) << "step " << i;
      for (size_t s = 0; s < 3; ++s) EXPECT_NEAR(r.stage_busy_s[s], e.stage_busy_s[s], tol) << i;
    }
  }
}

// Stage 0 takes 10.5 ms + 4 ms of send (100 MB at 25 GB/s), the pipeline's bottleneck: a's
// sends occupy [10.5, 14.5) ms of every 14.5 ms; b, 5 ms later, [0.5, 5) of them: never meet.
TEST(ClosedFormSends, SendsThatNeverMeetGiveTheSameTimesWithFewerEvents) {
  Outcome closed, events;
  run(true, false, 0.005, 60, &closed);
  run(false, false, 0.005, 60, &events);
  expect_same(closed.a, events.a, 60, 0);
  expect_same(closed.b, events.b, 60, 0);
  EXPECT_EQ(closed.conversions, 0);
  EXPECT_EQ(events.conversions, 0);
  // Consecutive ends paced by stage 0 (14.5 ms + latency) once the pipeline is full.
  for (int i = 5; i < 60; ++i)
    EXPECT_NEAR(closed.a.results[i].end_s - closed.a.results[i - 1].end_s, 0.0145, 1e-4) << i;
  EXPECT_EQ(closed.activities, events.activities);
  EXPECT_EQ(closed.materialized, 0u);
}

// Varying batch costs: the two replicas' sends drift into and out of each other. Wherever
// they overlap they share the NICs (SimGrid flows) in both runs: the same times up to the
// rounding of converting a lone flow.
TEST(ClosedFormSends, SendsThatMeetShareTheNicsAsEventDrivenStagesDo) {
  std::uint64_t materialized = 0, promoted = 0;
  for (double offset : {0.0, 0.0003, 0.0021, 0.011}) {
    SCOPED_TRACE(offset);
    Outcome closed, events;
    run(true, true, offset, 80, &closed);
    run(false, true, offset, 80, &events);
    EXPECT_GT(events.conversions, 0);  // they do meet
    EXPECT_GT(closed.conversions, 0);
    EXPECT_EQ(events.materialized + events.promoted, 0u);
    expect_same(closed.a, events.a, 80, 1e-9);
    expect_same(closed.b, events.b, 80, 1e-9);
    materialized += closed.materialized;
    promoted += closed.promoted;
  }
  // Planned steps met a flow and continued event-driven; where the sends part again (not in
  // lockstep, offsets 0 and 0.3 ms, where they keep meeting), they were planned again.
  EXPECT_GT(materialized, 0u);
  EXPECT_GT(promoted, 0u);
}

// A replica destroyed with planned steps in flight takes their registered sends with it:
// another replica's sends over the same NICs, planned where the destroyed one's would have
// been, find the links free (no conversion of a send that no longer exists, no plan that
// fails on one).
TEST(ClosedFormSends, DestroyedWithPlannedSendsInFlight) {
  auto p = SimPlatform::create(testing::test_topology(3));
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  std::unique_ptr<SimPlatform> platform = std::move(p).value();
  ASSERT_TRUE(platform->enable_lone_flows());
  SimRuntime rt;
  SimSpeedups o = unconditional_speedups();
  o.chain_stages = o.closed_form_pipeline = o.lone_flows = o.closed_form_sends = true;
  o.lone_flows_on_contention_links = true;
  auto a = std::make_unique<SimExecutor>(platform.get(), &rt, placement({{0}, {8}, {16}}),
                                         costs(false), o);
  SimExecutor b(platform.get(), &rt, placement({{1}, {9}, {17}}), costs(false), o);
  // c never launches; it keeps the NICs shared (claimed by two replicas) once a is gone, so
  // that b's sends are lone flows checked against what is registered there.
  SimExecutor c(platform.get(), &rt, placement({{2}, {10}, {18}}), costs(false), o);
  Driver da, db;
  da.ex = a.get();
  db.ex = &b;
  da.total = 3;
  db.total = 20;
  rt.at(0.0, [&] {
    for (int i = 0; i < 3; ++i) da.launch();
  });
  platform->run_until(0.001);  // a's three steps are planned, their sends registered ahead
  EXPECT_TRUE(da.results.empty());
  a.reset();
  da.ex = nullptr;
  const long conversions = platform->occupancy().conversions();
  rt.at(0.001, [&] {  // b's sends overlap where a's would have been
    for (int i = 0; i < 3; ++i) db.launch();
  });
  platform->run();
  ASSERT_EQ(db.results.size(), 20u);
  for (const StepResult& r : db.results) EXPECT_TRUE(r.status.ok()) << r.status.to_string();
  EXPECT_TRUE(da.results.empty());
  EXPECT_EQ(platform->occupancy().conversions(), conversions);
  EXPECT_EQ(b.materialized(), 0u);
  EXPECT_EQ(b.promoted(), 0u);  // never event-driven: every step planned at launch
}

}  // namespace
}  // namespace prima::sim
