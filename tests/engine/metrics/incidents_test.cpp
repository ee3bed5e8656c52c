#include "engine/metrics/incidents.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>

#include "engine/metrics/report.h"

namespace prima::metrics {
namespace {

void finish(Recorder* rec, RequestId id, double arrival, double end, Outcome o) {
  Sequence s;
  s.req.id = id;
  s.req.arrival_s = arrival;
  s.req.prompt_tokens = 10;
  s.req.max_output_tokens = 2;
  s.num_generated = 2;
  s.first_token_s = arrival + 0.1;
  s.outcome = o;
  rec->on_arrival(arrival);
  rec->on_end(s, end);
}

TEST(Incidents, InsideIsInFlightDuringTheWindow) {
  Recorder rec;
  // Outside the window [10, 20]: short requests.
  for (int i = 0; i < 50; ++i) finish(&rec, i + 1, i * 0.1, i * 0.1 + 1.0, Outcome::kCompleted);
  // In flight across the window's start, inside it, and across its end: slow ones.
  finish(&rec, 100, 9, 15, Outcome::kCompleted);   // e2e 6
  finish(&rec, 101, 12, 14, Outcome::kCompleted);  // e2e 2
  finish(&rec, 102, 19, 23, Outcome::kCompleted);  // e2e 4
  finish(&rec, 103, 15, 16, Outcome::kFailed);
  finish(&rec, 104, 30, 31, Outcome::kCompleted);  // after: outside, e2e 1
  auto j = incidents_json(rec, {{"node_failure#0", "node_failure", "node 1", 10, 20}}, 40);
  ASSERT_EQ(j.size(), 1u);
  const auto& e = j[0];
  EXPECT_EQ(e["fault"], "node_failure#0");
  EXPECT_EQ(e["start_s"], 10.0);
  EXPECT_EQ(e["end_s"], 20.0);
  EXPECT_FALSE(e["ongoing"].get<bool>());
  EXPECT_EQ(e["requests_inside"], 4);
  EXPECT_EQ(e["requests_outside"], 51);
  EXPECT_EQ(e["failed_inside"], 1);
  EXPECT_NEAR(e["e2e_p99_inside_s"].get<double>(), 6.0, 0.1);
  EXPECT_NEAR(e["e2e_p99_outside_s"].get<double>(), 1.0, 1e-9);
  EXPECT_GT(e["e2e_p99_inside_s"].get<double>(), 2 * e["e2e_p99_outside_s"].get<double>());
}

TEST(Incidents, EndlessWindowsCloseAtTheRunEnd) {
  Recorder rec;
  finish(&rec, 1, 1, 2, Outcome::kCompleted);
  auto j = incidents_json(
      rec, {{"x", "gpu_failure", "gpu 1", 5, std::numeric_limits<double>::infinity()}}, 30);
  EXPECT_EQ(j[0]["end_s"], 30.0);
  EXPECT_TRUE(j[0]["ongoing"].get<bool>());
  EXPECT_EQ(j[0]["requests_inside"], 0);
  EXPECT_EQ(j[0]["e2e_p99_inside_s"], 0.0);  // nothing inside: 0, not NaN
  EXPECT_TRUE(incidents_json(rec, {}, 30).is_array());
}

TEST(Incidents, TimelineCarriesExtraColumns) {
  Recorder rec;
  rec.set_extra_columns({"temp_c_node0", "active_faults"});
  rec.sample(1, 0, 0, 1, 0, {"22.0", ""});
  rec.sample(2, 0, 0, 1, 0, {"35.5", "thermal#0"});
  rec.sample(3, 0, 0, 1, 0);  // missing values stay empty
  const std::string path = ::testing::TempDir() + "/timeline_extra.csv";
  ASSERT_TRUE(write_timeline_csv(rec, path).ok());
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  EXPECT_NE(text.find("e2e_p99_s,temp_c_node0,active_faults\n"), std::string::npos);
  EXPECT_NE(text.find(",35.5,thermal#0\n"), std::string::npos);
  EXPECT_NE(text.find("0.000000,0.000000,,\n"), std::string::npos);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace prima::metrics
