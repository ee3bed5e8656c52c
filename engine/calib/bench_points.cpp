// Loading published engine measurements (bench_points.h).
#include "engine/calib/bench_points.h"

#include <fmt/format.h>

#include <algorithm>

#include "engine/config/json_parse.h"
#include "engine/perf/engine_profile.h"
#include "engine/plan/topology.h"

namespace prima::calib {
namespace {

using config::Json;
using config::JsonReader;

const std::vector<std::string>& metrics_known() {
  static const std::vector<std::string> kMetrics = {
      "ttft", "tpot", "e2e", "output_throughput", "total_throughput", "request_throughput"};
  return kMetrics;
}

bool is_latency(const std::string& m) {
  return m == "ttft" || m == "tpot" || m == "e2e";
}

PointSource parse_source(const JsonReader& r, const std::string& id) {
  PointSource s;
  s.id = id;
  s.url = r.string("url");
  if (s.url.empty()) r.fail("url", "every source gives where it can be read (a URL)");
  s.title = r.string("title");
  s.date = r.string("date");
  s.version = r.string("version", "");
  s.setup = r.string("setup", "");
  r.finish();
  return s;
}

// A length as a scenario takes it: a positive integer or a distribution object.
Json length(const JsonReader& r, const std::string& key) {
  const Json& v = r.value(key);
  if (v.is_number_integer() && v.get<long long>() > 0) return v;
  if (v.is_object()) return v;
  r.fail(key,
         "expected a positive token count or a length distribution, got " + config::describe(v));
}

BenchPoint parse_point(const JsonReader& r, const BenchSet& set) {
  BenchPoint p;
  p.id = r.string("id");
  p.source = r.string("source");
  if (p.source.empty() || !set.sources.count(p.source))
    r.fail("source", "\"" + p.source +
                         "\" is not one of the file's sources: every point names "
                         "the source it was copied from");
  p.engine = r.string("engine");
  if (!perf::builtin_engine(p.engine))
    r.fail("engine", "unknown engine \"" + p.engine + "\" (known: " +
                         fmt::format("{}", fmt::join(perf::builtin_engine_names(), ", ")) + ")");
  p.gpu = r.string("gpu");
  if (!plan::gpu_by_name(p.gpu).ok()) r.fail("gpu", "unknown GPU type \"" + p.gpu + "\"");
  p.model = r.value("model");
  p.quantization = r.string("quantization", p.quantization);
  p.tensor_parallel = static_cast<int>(r.positive_integer("tensor_parallel", 1));
  const JsonReader w = r.object("workload");
  p.requests = static_cast<int>(w.positive_integer("requests"));
  p.rate_rps = w.non_negative_number("rate_rps", 0);
  p.concurrency = static_cast<int>(w.non_negative_integer("concurrency", 0));
  if (p.rate_rps > 0 && p.concurrency > 0)
    w.fail("concurrency", "give a request rate or a concurrency, not both");
  p.input_tokens = length(w, "input_tokens");
  p.output_tokens = length(w, "output_tokens");
  w.finish();
  if (r.has("scheduler")) p.scheduler = r.object("scheduler").json();
  p.memory_utilization = r.fraction("memory_utilization", 0);
  p.kv_cache_dtype = r.one_of("kv_cache_dtype", {"", "fp16", "bf16", "fp8", "int8"}, "");
  p.metric = r.one_of("metric", metrics_known());
  p.stat = is_latency(p.metric) ? r.one_of("stat", {"mean", "p50", "p99", "max"})
                                : r.one_of("stat", {"value"}, "value");
  p.measured = is_latency(p.metric) ? r.duration_s("measured") : r.positive_number("measured");
  if (!(p.measured > 0)) r.fail("measured", "expected a measured figure > 0");
  r.string("note", "");
  r.finish();
  return p;
}

}  // namespace

std::string BenchPoint::kind() const {
  if (rate_rps > 0) return "server";
  if (concurrency > 0) return "concurrency";
  if (requests == 1) return "batch-1 latency";
  return is_latency(metric) ? "batch latency" : "offline throughput";
}

std::string metric_group(const std::string& metric) {
  return is_latency(metric) ? metric : "throughput";
}

Result<BenchSet> parse_bench_points(const Json& j, const std::string& file) {
  BenchSet set;
  set.file = file;
  Status st = config::to_status([&] {
    JsonReader r(j, file);
    r.string("description", "");
    const JsonReader s = r.object("sources");
    for (auto it = s.json().begin(); it != s.json().end(); ++it)
      set.sources[it.key()] = parse_source(s.object(it.key()), it.key());
    s.finish();
    for (const JsonReader& p : r.objects("points")) set.points.push_back(parse_point(p, set));
    if (set.points.empty()) r.fail("points", "no point");
    r.finish();
  });
  if (!st.ok()) return st;
  return set;
}

Result<BenchSet> load_bench_points(const std::string& path) {
  PRIMA_ASSIGN_OR_RETURN(Json j, config::read_json_file(path));
  return parse_bench_points(j, path);
}

}  // namespace prima::calib
