// Helpers for the workload tests: parse a workload from JSON text and run a driver on a
// ManualRuntime, collecting what it submits. Single-threaded test code.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "engine/config/json_reader.h"
#include "engine/workload/workload.h"
#include "tests/support/manual_runtime.h"

namespace prima::workload::testing {

inline std::string data_dir() {
  return std::string(PRIMA_SOURCE_DIR) + "/tests/data/workload";
}

// Parses `text` (the "workload" object); fails the test on error.
inline WorkloadSpec spec_from(const std::string& text) {
  config::Json j = config::Json::parse(text);
  config::JsonReader r(j, "test.json", "/workload");
  auto spec = parse_workload_status(r, data_dir());
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return spec.ok() ? spec.value() : WorkloadSpec{};
}

// The parse error message for `text` ("" if it parsed).
inline std::string parse_error(const std::string& text) {
  config::Json j = config::Json::parse(text);
  config::JsonReader r(j, "test.json", "/workload");
  auto spec = parse_workload_status(r, data_dir());
  return spec.ok() ? "" : spec.status().message();
}

// Runs an open-loop workload to completion and returns every request, checking that the
// driver never holds more than one timer.
inline std::vector<RequestSpec> run_open(const WorkloadSpec& spec, std::uint64_t seed,
                                         double duration_s) {
  auto d = make_workload(spec, seed, duration_s);
  EXPECT_TRUE(d.ok()) << d.status().message();
  if (!d.ok()) return {};
  prima::testing::ManualRuntime rt;
  std::vector<RequestSpec> out;
  EXPECT_TRUE((*d)->start(&rt, [&](const RequestSpec& r) { out.push_back(r); }).ok());
  std::size_t max_pending = 0;
  while (rt.pending() > 0) {
    max_pending = std::max(max_pending, rt.pending());
    rt.run_until_idle(1);
  }
  EXPECT_LE(max_pending, 1u);
  EXPECT_TRUE((*d)->done());
  EXPECT_EQ((*d)->submitted(), out.size());
  return out;
}

struct Moments {
  double mean = 0, stddev = 0;
  double cv() const { return stddev / mean; }
};

inline Moments moments(const std::vector<double>& v) {
  Moments m;
  for (double x : v) m.mean += x;
  m.mean /= static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - m.mean) * (x - m.mean);
  m.stddev = std::sqrt(ss / static_cast<double>(v.size() - 1));
  return m;
}

inline std::vector<double> gaps(const std::vector<RequestSpec>& rs) {
  std::vector<double> g;
  for (std::size_t i = 1; i < rs.size(); ++i) g.push_back(rs[i].arrival_s - rs[i - 1].arrival_s);
  return g;
}

}  // namespace prima::workload::testing
