#include <gtest/gtest.h>

#include <limits>
#include <map>

#include "tests/engine/workload/workload_test_util.h"

namespace prima::workload {
namespace {

using testing::moments;
using testing::spec_from;

constexpr double kInf = std::numeric_limits<double>::infinity();

// Runs a closed loop where every request takes `service_s`; records arrivals and, per
// request, the finish time, and checks the outstanding count never exceeds the users.
struct ClosedRun {
  std::vector<RequestSpec> sent;
  std::vector<double> finished_at;  // by index in sent
  std::vector<double> think;        // next arrival - previous finish, same user
  std::size_t max_outstanding = 0;
  std::uint64_t submitted = 0;
  bool done = false;
};

ClosedRun run_closed(const WorkloadSpec& spec, std::uint64_t seed, double duration_s,
                     double service_s) {
  ClosedRun run;
  auto d = make_workload(spec, seed, duration_s);
  EXPECT_TRUE(d.ok()) << d.status().message();
  if (!d.ok()) return run;
  prima::testing::ManualRuntime rt;
  std::size_t outstanding = 0;
  std::map<std::uint64_t, double> last_finish;
  WorkloadDriver* drv = d->get();
  EXPECT_TRUE(drv->start(&rt,
                         [&](const RequestSpec& r) {
                           ++outstanding;
                           run.max_outstanding = std::max(run.max_outstanding, outstanding);
                           auto it = last_finish.find(r.user);
                           if (it != last_finish.end())
                             run.think.push_back(r.arrival_s - it->second);
                           run.sent.push_back(r);
                           rt.at(rt.now() + service_s, [&, r] {
                             --outstanding;
                             last_finish[r.user] = rt.now();
                             drv->on_finished(r, rt.now());
                           });
                         })
                  .ok());
  rt.run_until_idle();
  run.submitted = drv->submitted();
  run.done = drv->done();
  return run;
}

TEST(WorkloadClosedLoop, UsersNeverExceedNAndFixedThinkRespected) {
  auto spec = spec_from(R"({"arrival": {"type": "closed_loop", "users": 5,
    "think_time_s": {"type": "fixed", "value": "1s"}},
    "prompt_tokens": 10, "output_tokens": 10})");
  auto run = run_closed(spec, 1, 100.0, 0.5);
  EXPECT_EQ(run.max_outstanding, 5u);
  ASSERT_FALSE(run.think.empty());
  for (double t : run.think) EXPECT_NEAR(t, 1.0, 1e-9);
  // Each user: one request per 1.5 s for 100 s -> 67 each.
  EXPECT_EQ(run.sent.size(), 5u * 67);
  EXPECT_TRUE(run.done);
  for (const auto& r : run.sent) {
    EXPECT_GE(r.user, 1u);
    EXPECT_LE(r.user, 5u);
    EXPECT_LT(r.arrival_s, 100.0);
  }
}

// A sequence gives the k-th request sent its k-th values, whichever user sends it: the lengths
// of a benchmark run (bench_serving's list, sent in order as concurrency frees) replay as run.
TEST(WorkloadClosedLoop, SequenceLengthsFollowTheSendingOrder) {
  auto spec = spec_from(R"({"arrival": {"type": "closed_loop", "users": 3},
    "prompt_tokens": {"type": "sequence", "values": [38, 236, 909, 73]},
    "output_tokens": {"type": "sequence", "values": [145, 130, 973, 584]},
    "max_requests": 6})");
  auto run = run_closed(spec, 1, kInf, 0.5);
  ASSERT_EQ(run.sent.size(), 6u);
  const std::vector<int> in = {38, 236, 909, 73, 38, 236}, out = {145, 130, 973, 584, 145, 130};
  for (std::size_t k = 0; k < run.sent.size(); ++k) {
    EXPECT_EQ(run.sent[k].prompt_tokens, in[k]) << k;
    EXPECT_EQ(run.sent[k].output_tokens, out[k]) << k;
  }
}

TEST(WorkloadClosedLoop, ExponentialThinkMean) {
  auto spec = spec_from(R"({"arrival": {"type": "closed_loop", "users": 20,
    "think_time_s": 2}, "prompt_tokens": 10, "output_tokens": 10, "max_requests": 20000})");
  auto run = run_closed(spec, 3, kInf, 0.1);
  EXPECT_EQ(run.submitted, 20000u);
  EXPECT_EQ(run.sent.size(), 20000u);
  EXPECT_TRUE(run.done);
  EXPECT_LE(run.max_outstanding, 20u);
  auto m = moments(run.think);
  EXPECT_NEAR(m.mean, 2.0, 0.06);
  EXPECT_NEAR(m.cv(), 1.0, 0.04);
}

TEST(WorkloadClosedLoop, RampUpSpreadsUserStarts) {
  auto spec = spec_from(R"({"arrival": {"type": "closed_loop", "users": 4,
    "think_time_s": 0, "ramp_up_s": "2s"}, "prompt_tokens": 1, "output_tokens": 1,
    "max_requests": 4})");
  auto run = run_closed(spec, 1, kInf, 10.0);
  ASSERT_EQ(run.sent.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_DOUBLE_EQ(run.sent[i].arrival_s, 0.5 * i);
    EXPECT_EQ(run.sent[i].user, static_cast<std::uint64_t>(i + 1));
  }
}

TEST(WorkloadClosedLoop, UserSequenceIndependentOfServiceTime) {
  // Per-user streams: a user's k-th request has the same lengths whatever the service time.
  auto spec = spec_from(R"({"arrival": {"type": "closed_loop", "users": 3, "think_time_s": 1},
    "prompt_tokens": {"type": "uniform", "min": 1, "max": 10000}, "output_tokens": 5})");
  auto fast = run_closed(spec, 8, 50.0, 0.1);
  auto slow = run_closed(spec, 8, 50.0, 0.7);
  std::map<std::uint64_t, std::vector<int>> a, b;
  for (const auto& r : fast.sent) a[r.user].push_back(r.prompt_tokens);
  for (const auto& r : slow.sent) b[r.user].push_back(r.prompt_tokens);
  for (std::uint64_t u = 1; u <= 3; ++u) {
    ASSERT_FALSE(b[u].empty());
    for (std::size_t k = 0; k < b[u].size(); ++k) EXPECT_EQ(a[u][k], b[u][k]);
  }
}

TEST(WorkloadClosedLoop, IgnoresUnknownAndRepeatedFinishes) {
  auto d = make_workload(spec_from(R"({"arrival": {"type": "closed_loop", "users": 1,
    "think_time_s": 0}, "prompt_tokens": 1, "output_tokens": 1})"),
                         1, 10.0);
  ASSERT_TRUE(d.ok());
  prima::testing::ManualRuntime rt;
  std::vector<RequestSpec> out;
  ASSERT_TRUE((*d)->start(&rt, [&](const RequestSpec& r) { out.push_back(r); }).ok());
  rt.run_until_idle();
  ASSERT_EQ(out.size(), 1u);
  RequestSpec stranger = out[0];
  stranger.user = 7;
  (*d)->on_finished(stranger, rt.now());
  (*d)->on_finished(out[0], rt.now());
  (*d)->on_finished(out[0], rt.now());  // twice: ignored
  rt.run_until_idle();
  EXPECT_EQ(out.size(), 2u);
  EXPECT_FALSE((*d)->done());
}

}  // namespace
}  // namespace prima::workload
