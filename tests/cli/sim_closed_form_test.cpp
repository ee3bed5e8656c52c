// `prima simulate` with the sim backend's closed-form pipeline (sim.closed_form_pipeline, on by
// default where stages are chained) and without it: the reports must be identical apart from
// their wall-clock key `run`, on a full pipeline (bench/bitbrick_64gpu, shortened) and on the
// default scenario; a misspelt option is rejected with exit code 2 naming the valid fields.
#include <gtest/gtest.h>

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

void expect_same_with_and_without(const std::string& args) {
  const json on = report(args);
  const json off = report(args + " --set sim.closed_form_pipeline=false");
  ASSERT_TRUE(on.contains("requests")) << on.dump();
  EXPECT_GT(on["requests"]["completed"].get<long>(), 0);
  EXPECT_EQ(on.dump(), off.dump());
}

TEST(SimClosedForm, FullPipelineSameReportWithAndWithout) {
  expect_same_with_and_without(source_path("scenarios/bench/bitbrick_64gpu.json") +
                               " --set duration=10s");
}

TEST(SimClosedForm, DefaultScenarioSameReportWithAndWithout) {
  expect_same_with_and_without("--set duration=120s");
}

TEST(SimClosedForm, MisspeltOptionIsRejected) {
  auto r = run_prima("simulate --set duration=10s --set sim.closed_form_pipelin=false -q --json");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("closed_form_pipelin"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("closed_form_pipeline"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace prima::testing
