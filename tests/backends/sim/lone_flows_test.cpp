// Lone flows (SimSpeedups::lone_flows, backends/sim/link_occupancy.h): LinkOccupancy's
// bookkeeping on its own, then sends of two replicas sharing a NIC, timed with lone flows and
// with SimGrid flows only: the same step times (computed by hand too) whether the sends
// overlap from the start, meet in a latency phase, meet in a bandwidth phase or never meet;
// and a fabric transfer joining a send, or arriving while the send is still folded into its
// stage's compute timer.
#include <gtest/gtest.h>

#include <simgrid/s4u.hpp>

#include "backends/sim/link_occupancy.h"
#include "backends/sim/sim_executor.h"
#include "backends/sim/sim_fabric.h"
#include "backends/sim/sim_runtime.h"
#include "tests/backends/sim/sim_test_util.h"

namespace prima::sim {
namespace {

// Links 1..8 of a bare SimGrid platform (LinkOccupancy keeps its state in the links' data).
simgrid::s4u::Link* fake_link(std::uintptr_t i) {
  static std::vector<simgrid::s4u::Link*> links = [] {
    static int argc = 1;
    static char name[] = "lone_flows_test";
    static char* argv[] = {name, nullptr};
    static simgrid::s4u::Engine engine(&argc, argv);
    auto* zone = simgrid::s4u::create_full_zone("links");
    std::vector<simgrid::s4u::Link*> v;
    for (int k = 0; k <= 8; ++k) v.push_back(zone->create_link("l" + std::to_string(k), 1e9));
    zone->seal();
    return v;
  }();
  return links.at(i);
}

struct FakeLone : LoneFlow {
  std::vector<simgrid::s4u::Link*> links;
  double start = 0, end = 1e9;
  std::vector<std::pair<double, double>> converted;  // (now, eps)
  void convert(double now, double eps) override { converted.emplace_back(now, eps); }
  const OccupancyRoute* route = nullptr;  // links, as the occupancy it registers with resolved them
  const OccupancyRoute& lone_route() const override { return *route; }
  double lone_start_s() const override { return start; }
  double lone_end_s() const override { return end; }
};

TEST(LinkOccupancy, LoneFlowsConvertWhenAFlowJoins) {
  LinkOccupancy occ;
  EXPECT_FALSE(occ.enabled());
  occ.enable();
  EXPECT_TRUE(occ.enabled());
  FakeLone a, b;
  a.links = {fake_link(1), fake_link(2)};
  b.links = {fake_link(3)};
  a.route = occ.route(a.links);
  b.route = occ.route(b.links);
  EXPECT_EQ(occ.route({fake_link(1), fake_link(2)}), a.route);  // resolved once
  EXPECT_EQ(a.route->links(), a.links);
  EXPECT_TRUE(occ.idle(a.links, 0, 1));
  occ.add_lone(&a);
  occ.add_lone(&b);
  EXPECT_FALSE(occ.idle({fake_link(2)}, 0, 1));
  EXPECT_FALSE(occ.idle({fake_link(3), fake_link(4)}, 0, 1));
  EXPECT_TRUE(occ.idle({fake_link(4)}, 0, 1));
  // A flow on links 2 and 4 (latency 2 us): a converts, once, with eps = 1 ns; b stays.
  occ.flow_started({fake_link(2), fake_link(4)}, 5.0, 2e-6);
  ASSERT_EQ(a.converted.size(), 1u);
  EXPECT_EQ(a.converted[0].first, 5.0);
  EXPECT_EQ(a.converted[0].second, 1e-9);
  EXPECT_TRUE(b.converted.empty());
  EXPECT_EQ(occ.conversions(), 1);
  // a is no longer registered; the flow occupies 2 and 4 until it ends.
  EXPECT_TRUE(occ.idle({fake_link(1)}, 0, 1));
  EXPECT_FALSE(occ.idle({fake_link(4)}, 0, 1));
  occ.remove_lone(&a);  // its timer may still fire: a no-op
  // A short route (latency 2 ns): eps is a quarter of it.
  occ.flow_started({fake_link(3)}, 6.0, 2e-9);
  ASSERT_EQ(b.converted.size(), 1u);
  EXPECT_DOUBLE_EQ(b.converted[0].second, 0.5e-9);
  occ.flow_ended({fake_link(2), fake_link(4)});
  occ.flow_ended({fake_link(3)});
  EXPECT_TRUE(occ.idle({fake_link(1), fake_link(2), fake_link(3), fake_link(4)}, 0, 1));
  occ.flow_ended({fake_link(3)});  // more ends than starts: counts stay at 0
  EXPECT_TRUE(occ.idle({fake_link(3)}, 0, 1));
  occ.remove_lone(&b);
  occ.add_lone(&b);
  EXPECT_FALSE(occ.idle({fake_link(3)}, 0, 1));
  occ.remove_lone(&b);
  EXPECT_TRUE(occ.idle({fake_link(3)}, 0, 1));
}

// Two occupancies over the same links (the second finds the links' data taken and keeps its
// own map) see only their own flows; each clears the link data it set when it goes.
TEST(LinkOccupancy, TwoOccupanciesOnTheSameLinksAreIndependent) {
  FakeLone a, b;
  a.links = {fake_link(5), fake_link(6)};
  b.links = {fake_link(6), fake_link(7)};
  {
    LinkOccupancy first;
    a.route = first.route(a.links);
    first.add_lone(&a);
    {
      LinkOccupancy second;
      EXPECT_TRUE(second.idle(a.links, 0, 1));
      b.route = second.route(b.links);
      second.add_lone(&b);
      EXPECT_FALSE(second.idle({fake_link(6)}, 0, 1));
      EXPECT_TRUE(second.idle({fake_link(5)}, 0, 1));
      EXPECT_FALSE(first.idle({fake_link(5)}, 0, 1));
      EXPECT_TRUE(first.idle({fake_link(7)}, 0, 1));
      second.flow_started({fake_link(6)}, 1.0, 1e-6);
      EXPECT_EQ(b.converted.size(), 1u);
      EXPECT_TRUE(a.converted.empty());
      EXPECT_FALSE(first.idle({fake_link(6)}, 2, 3));  // a's interval [0, 1e9)
      first.remove_lone(&a);
      EXPECT_TRUE(first.idle({fake_link(6)}, 2, 3));  // second's flow is not first's
      EXPECT_FALSE(second.idle({fake_link(6)}, 2, 3));
    }
    first.flow_started({fake_link(5)}, 4.0, 1e-6);
    EXPECT_FALSE(first.idle({fake_link(5)}, 0, 1));
  }
  EXPECT_EQ(fake_link(5)->get_data<void>(), nullptr);
  EXPECT_EQ(fake_link(6)->get_data<void>(), nullptr);
  LinkOccupancy third;  // the links are free again
  EXPECT_TRUE(third.idle({fake_link(5), fake_link(6), fake_link(7)}, 0, 1));
}

struct Harness {
  std::unique_ptr<SimPlatform> platform;
  SimRuntime* rt = nullptr;
  Harness() {
    auto p = SimPlatform::create(testing::test_topology(2));
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    platform = std::move(p).value();
    EXPECT_TRUE(platform->enable_lone_flows());
    rt = new SimRuntime();
  }
  ~Harness() { delete rt; }
};

using testing::placement;

// Two stages: 10 ms compute then a 100 MB send to the other node; 10 ms compute.
SimCostFns two_stage_costs() {
  return default_cost_fns([](const BatchShape&) {
    perf::StepCost c;
    c.stages.resize(2);
    c.stages[0].compute_s = 0.010;
    c.stages[0].send_bytes = 1e8;
    c.stages[1].compute_s = 0.010;
    return c;
  });
}

struct Pair {
  StepResult a, b;
  std::uint64_t acts_a = 0, acts_b = 0;
  long conversions = 0;
};

// Replica a (gpu 0 -> gpu 8) starts at `at`, replica b (gpu 1 -> gpu 9) at `at + offset`:
// their sends share node 0's NIC up and node 1's NIC down (and the fabric link between).
Pair run_pair(Harness& h, bool lone, double offset) {
  SimSpeedups o = unconditional_speedups();
  o.lone_flows = lone;
  SimExecutor a(h.platform.get(), h.rt, placement({{0}, {8}}), two_stage_costs(), o);
  SimExecutor b(h.platform.get(), h.rt, placement({{1}, {9}}), two_stage_costs(), o);
  Pair p;
  const long conv0 = h.platform->occupancy().conversions();
  const double at = h.rt->now() + 1.0;
  h.rt->at(at, [&] { a.launch(StepBatch{}, [&](const StepResult& r) { p.a = r; }); });
  h.rt->at(at + offset, [&] { b.launch(StepBatch{}, [&](const StepResult& r) { p.b = r; }); });
  h.platform->run();
  p.acts_a = a.activities_started();
  p.acts_b = b.activities_started();
  p.conversions = h.platform->occupancy().conversions() - conv0;
  return p;
}

void expect_same_times(const Pair& lone, const Pair& flows) {
  ASSERT_TRUE(lone.a.status.ok() && lone.b.status.ok());
  ASSERT_TRUE(flows.a.status.ok() && flows.b.status.ok());
  EXPECT_NEAR(lone.a.end_s - lone.a.start_s, flows.a.end_s - flows.a.start_s, 1e-9);
  EXPECT_NEAR(lone.b.end_s - lone.b.start_s, flows.b.end_s - flows.b.start_s, 1e-9);
  for (int s = 0; s < 2; ++s) {
    EXPECT_NEAR(lone.a.stage_busy_s[s], flows.a.stage_busy_s[s], 1e-9);
    EXPECT_NEAR(lone.b.stage_busy_s[s], flows.b.stage_busy_s[s], 1e-9);
  }
}

constexpr double kLat = 8e-6;  // the route gpu 0 -> gpu 8 (as SimExecutor's tests)
constexpr double kBw = 25e9;

TEST(LoneFlows, SendsStartingTogetherShareTheNic) {
  Harness h;
  const Pair lone = run_pair(h, true, 0.0);
  const Pair flows = run_pair(h, false, 0.0);
  expect_same_times(lone, flows);
  EXPECT_EQ(lone.conversions, 1);  // b's send turns a's lone send into a flow at once
  // 12.5 GB/s each.
  EXPECT_NEAR(lone.a.end_s - lone.a.start_s, 0.010 + kLat + 1e8 / 12.5e9 + 0.010, 1e-9);
  EXPECT_EQ(lone.acts_a, 3u);  // compute timer, send (lone, then a Comm), compute timer
  EXPECT_EQ(flows.acts_a, 3u);
}

TEST(LoneFlows, MeetingInTheBandwidthPhase) {
  Harness h;
  const Pair lone = run_pair(h, true, 0.0005);
  const Pair flows = run_pair(h, false, 0.0005);
  expect_same_times(lone, flows);
  EXPECT_EQ(lone.conversions, 1);
  // a alone for 0.5 ms (12.5 MB), then both at 12.5 GB/s: a's last 87.5 MB take 7 ms; b then
  // has 12.5 MB left alone at 25 GB/s.
  EXPECT_NEAR(lone.a.end_s - lone.a.start_s, 0.010 + kLat + 0.0005 + 0.007 + 0.010, 1e-9);
  EXPECT_NEAR(lone.b.end_s - lone.b.start_s, 0.010 + kLat + 0.007 + 0.0005 + 0.010, 1e-9);
}

TEST(LoneFlows, MeetingInTheLatencyPhase) {
  Harness h;
  const Pair lone = run_pair(h, true, 3e-6);
  const Pair flows = run_pair(h, false, 3e-6);
  expect_same_times(lone, flows);
  EXPECT_EQ(lone.conversions, 1);
  // a's bandwidth phase starts 3 us before b's: 75 kB alone, then shared.
  const double alone = 3e-6 * kBw;
  EXPECT_NEAR(lone.a.end_s - lone.a.start_s, 0.010 + kLat + 3e-6 + (1e8 - alone) / 12.5e9 + 0.010,
              1e-9);
}

TEST(LoneFlows, SendsThatNeverMeetStayLone) {
  Harness h;
  const Pair lone = run_pair(h, true, 0.005);
  const Pair flows = run_pair(h, false, 0.005);
  expect_same_times(lone, flows);
  EXPECT_EQ(lone.conversions, 0);
  EXPECT_NEAR(lone.a.end_s - lone.a.start_s, 0.010 + kLat + 1e8 / kBw + 0.010, 1e-9);
  EXPECT_NEAR(lone.b.end_s - lone.b.start_s, 0.010 + kLat + 1e8 / kBw + 0.010, 1e-9);
}

// Replica a's step (gpu 0 -> gpu 8) from `at`, and a KV hand-off (SimFabric) of `bytes` from
// gpu 2 to gpu 10, over the same NICs, from `at + transfer_after`. Returns (step time,
// transfer end - at) and the LinkOccupancy conversions it caused.
struct WithTransfer {
  double step_s = 0, transfer_s = 0;
  long conversions = 0;
};
WithTransfer run_with_transfer(Harness& h, SimFabric& fabric, bool lone, double transfer_after,
                               Bytes bytes) {
  SimSpeedups o = unconditional_speedups();
  o.lone_flows = lone;
  SimExecutor a(h.platform.get(), h.rt, placement({{0}, {8}}), two_stage_costs(), o);
  StepResult r;
  double transfer_end = -1;
  const long conv0 = h.platform->occupancy().conversions();
  const double at = h.rt->now() + 1.0;
  h.rt->at(at, [&] { a.launch(StepBatch{}, [&](const StepResult& x) { r = x; }); });
  h.rt->at(at + transfer_after, [&] {
    fabric.transfer(2, 10, bytes, [&](Status s) {
      EXPECT_TRUE(s.ok()) << s.to_string();
      transfer_end = h.rt->now();
    });
  });
  h.platform->run();
  return {r.end_s - at, transfer_end - at, h.platform->occupancy().conversions() - conv0};
}

// The hand-off starts 1 ms into a's lone send (50 MB).
TEST(LoneFlows, FabricTransferJoiningALoneSend) {
  Harness h;
  SimFabric fabric(h.platform.get(), h.rt);
  const WithTransfer lone = run_with_transfer(h, fabric, true, 0.011, 50'000'000);
  const WithTransfer flows = run_with_transfer(h, fabric, false, 0.011, 50'000'000);
  EXPECT_EQ(lone.conversions, 1);
  EXPECT_NEAR(lone.step_s, flows.step_s, 1e-9);
  EXPECT_NEAR(lone.transfer_s, flows.transfer_s, 1e-9);
  // The send: 1 ms alone (25 MB), then shared with the transfer (its latency paid) for 4 ms.
  const double alone = 0.001 * kBw;
  const double shared_until_transfer_done = 0.011 + kLat + 50e6 / 12.5e9;  // 4 ms shared
  const double sent_shared = 50e6;
  const double left_after = 1e8 - alone - sent_shared;
  EXPECT_NEAR(lone.transfer_s, shared_until_transfer_done, 1e-9);
  EXPECT_NEAR(lone.step_s, shared_until_transfer_done + left_after / kBw + 0.010, 1e-9);
}

// The send is folded into its stage's compute timer; the hand-off (200 MB) starts 5 ms into
// that compute: the send is unfolded and, at the compute's end, finds the links busy and runs
// as a SimGrid flow.
TEST(LoneFlows, TransferDuringTheComputeUnfoldsTheSend) {
  Harness h;
  SimFabric fabric(h.platform.get(), h.rt);
  const WithTransfer lone = run_with_transfer(h, fabric, true, 0.005, 200'000'000);
  const WithTransfer flows = run_with_transfer(h, fabric, false, 0.005, 200'000'000);
  EXPECT_EQ(lone.conversions, 1);  // the unfolding
  EXPECT_NEAR(lone.step_s, flows.step_s, 1e-9);
  EXPECT_NEAR(lone.transfer_s, flows.transfer_s, 1e-9);
  // The transfer alone from 5.008 ms to 10.008 ms (125 MB), then both at 12.5 GB/s: its last
  // 75 MB take 6 ms; the send then has 25 MB left alone (1 ms); then 10 ms of compute.
  EXPECT_NEAR(lone.transfer_s, 0.016008, 1e-9);
  EXPECT_NEAR(lone.step_s, 0.017008 + 0.010, 1e-9);
}

}  // namespace
}  // namespace prima::sim
