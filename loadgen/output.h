// The benchmark's results as JSON (keys shared with report.json: requests.*, latency_s.*,
// throughput.*, slo.*; see docs/bench.md) and as a human-readable table.
//
// Pure functions; the caller prints or writes the strings.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "loadgen/record.h"
#include "loadgen/stats.h"

namespace prima::loadgen {

struct BenchInfo {
  std::string url, endpoint, model;
  bool stream = true;
  std::uint64_t seed = 0;
  nlohmann::ordered_json workload;  // what was sent (built by the caller)
  SloBounds slo;
  int max_workers = 0;
  double wall_s = 0;
};

// The first `limit` distinct failure messages with their counts, most frequent first.
std::vector<std::pair<std::string, std::size_t>> first_errors(
    const std::vector<RequestResult>& results, std::size_t limit);

nlohmann::ordered_json bench_json(const BenchInfo& info, const BenchStats& s,
                                  const std::vector<RequestResult>& results);

std::string bench_table(const BenchInfo& info, const BenchStats& s,
                        const std::vector<RequestResult>& results);

}  // namespace prima::loadgen
