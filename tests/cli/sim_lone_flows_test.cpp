// `prima simulate` with lone flows (sim.lone_flows, on by default without a fault timeline) and
// without them (every inter-node transfer a SimGrid flow): the reports agree apart from their
// wall-clock key `run`. Counts and strings are equal; times agree to 1e-7 relative (a lone
// flow's end is computed exactly, a SimGrid flow's to SimGrid's precision, so the last digits
// of a converted flow may differ). Scenarios: sends that may share links but never meet
// (bench/bitbrick_64gpu with the static shortcut off), two replicas' sends through each NIC
// (bench/bitbrick_64gpu_contended), and prefill/decode hand-offs crossing the InfiniBand
// fabric, which contend with the pipelines' sends and with each other. Likewise with and
// without closed-form sends (sim.closed_form_sends) where sends meet.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

using nlohmann::json;

json report(const std::string& args) {
  std::string failure;
  json j = simulate_report(args, &failure);
  EXPECT_FALSE(j.is_null()) << failure;
  return j.is_null() ? json::object() : j;
}

void expect_close(const json& a, const json& b, const std::string& path) {
  ASSERT_EQ(a.type(), b.type()) << path;
  if (a.is_object()) {
    ASSERT_EQ(a.size(), b.size()) << path;
    for (auto it = a.begin(); it != a.end(); ++it) {
      ASSERT_TRUE(b.contains(it.key())) << path << "/" << it.key();
      expect_close(it.value(), b[it.key()], path + "/" + it.key());
    }
  } else if (a.is_array()) {
    ASSERT_EQ(a.size(), b.size()) << path;
    for (size_t i = 0; i < a.size(); ++i) expect_close(a[i], b[i], path + "/" + std::to_string(i));
  } else if (a.is_number_float()) {
    const double x = a.get<double>(), y = b.get<double>();
    EXPECT_LE(std::abs(x - y), 1e-7 * std::max({std::abs(x), std::abs(y), 1e-9})) << path;
  } else {
    EXPECT_EQ(a, b) << path;
  }
}

void expect_same_with_and_without(const std::string& args,
                                  const std::string& option = "sim.lone_flows") {
  const json on = report(args);
  const json off = report(args + " --set " + option + "=false");
  ASSERT_TRUE(on.contains("requests")) << on.dump();
  EXPECT_GT(on["requests"]["completed"].get<long>(), 0);
  expect_close(on, off, "");
}

TEST(SimLoneFlows, SendsThatNeverMeetSameReport) {
  expect_same_with_and_without(source_path("scenarios/bench/bitbrick_64gpu.json") +
                               " --set duration=10s --set sim.exclusive_links_analytic=false");
}

// Two replicas' pipeline sends per NIC (stage-major placement): they meet and share it.
TEST(SimLoneFlows, ContendingSendsSameReport) {
  expect_same_with_and_without(source_path("scenarios/bench/bitbrick_64gpu_contended.json") +
                               " --set duration=10s");
}

// The same with the sends' steps timed at launch (sim.closed_form_sends, on by default) and
// event-driven: planned steps meeting another replica's sends turn event-driven and are
// planned again.
TEST(SimLoneFlows, ContendingSendsPlannedAtLaunchSameReport) {
  expect_same_with_and_without(
      source_path("scenarios/bench/bitbrick_64gpu_contended.json") + " --set duration=10s",
      "sim.closed_form_sends");
}

TEST(SimLoneFlows, ContendingHandOffsSameReport) {
  expect_same_with_and_without(source_path("scenarios/bench/bitbrick_64gpu.json") +
                               " --set duration=10s --set disaggregation.prefill_replicas=2"
                               " --set disaggregation.decode_replicas=4");
}

TEST(SimLoneFlows, MisspeltOptionIsRejected) {
  auto r = run_prima("simulate --set duration=10s --set sim.lone_flow=false -q --json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("lone_flow"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("lone_flows"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace prima::testing
