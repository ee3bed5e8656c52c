// Published measurements of serving engines (data/calibration/engines/*.json): each point a
// benchmark someone ran on one node (an engine, GPU type, model, quantization and TP degree; a
// workload of N requests at once or at a rate, of fixed or distributed lengths) and one figure
// it reported (TTFT, TPOT, end-to-end latency or throughput, at a statistic), with its source:
// URL, title, date and engine version. A point becomes the scenario a user would write for it
// (point_scenario), which the analytic run predicts. Format: docs/fidelity.md, "Engine
// calibration data". Plain values; thread-compatible.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "engine/config/json_reader.h"
#include "engine/core/status.h"

namespace prima::calib {

struct PointSource {
  std::string id, url, title, date, version, setup;
};

struct BenchPoint {
  std::string id;
  std::string source;  // a key of the file's "sources"
  std::string engine;  // a built-in engine name
  std::string gpu;     // a gpus.json name
  config::Json model;  // a catalog name or a model object, as a scenario's "model"
  std::string quantization = "bf16";
  int tensor_parallel = 1;
  // The workload: `requests` arriving at once (rate_rps 0: a latency or offline throughput
  // run) or as a Poisson process at rate_rps; lengths as a scenario's (numbers: fixed).
  int requests = 1;
  double rate_rps = 0;
  int concurrency = 0;  // > 0: that many users, each sending its next request when one ends
  config::Json input_tokens, output_tokens;
  config::Json scheduler;         // settings the source states (null: the engine's defaults)
  double memory_utilization = 0;  // stated by the source (0: the engine's)
  std::string kv_cache_dtype;     // "fp8" where the source (or its checkpoint) quantizes the KV
  // The figure: ttft, tpot, e2e (seconds) or output_throughput, total_throughput (tokens/s),
  // request_throughput (requests/s); at mean, p50, p99 or max (latencies).
  std::string metric, stat;
  double measured = 0;
  // "batch-1 latency", "batch latency", "offline throughput", "concurrency" or "server".
  std::string kind() const;
};

struct BenchSet {
  std::string file;
  std::map<std::string, PointSource> sources;
  std::vector<BenchPoint> points;
};

// Reads a file of points; every point names a source the file describes (with its URL and
// date), an engine prima knows, a GPU type and a metric. Errors name the file, the point and
// the key.
Result<BenchSet> load_bench_points(const std::string& path);
Result<BenchSet> parse_bench_points(const config::Json& j, const std::string& file);

// The metric group of a metric for error summaries: "ttft", "tpot", "e2e" or "throughput".
std::string metric_group(const std::string& metric);

}  // namespace prima::calib
