// End-to-end runs of `prima simulate`: outputs and their schema, conservation, determinism,
// the golden report, workloads from traces and closed-loop users.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

using nlohmann::json;

json simulate(const std::string& args, const std::string& name) {
  const std::string dir = temp_dir(name);
  auto r = run_prima("simulate " + args + " --out " + dir + " -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  if (r.exit_code != 0) return json::object();
  EXPECT_TRUE(std::filesystem::exists(dir + "/requests.csv"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/timeline.csv"));
  json rep = read_json(dir + "/report.json");
  rep["__dir"] = dir;
  return rep;
}

void expect_conservation(const json& r) {
  const auto& q = r["requests"];
  EXPECT_EQ(q["submitted"].get<long>(),
            q["completed"].get<long>() + q["rejected"].get<long>() + q["failed"].get<long>());
}

std::size_t count_lines(const std::string& text) {
  std::size_t n = 0;
  for (char c : text) n += c == '\n';
  return n;
}

TEST(Simulate, DefaultScenarioReportHasTheDocumentedKeys) {
  json r = simulate("--set duration=60s", "default");
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r["scenario"], "default");
  EXPECT_EQ(r["seed"], 42);
  EXPECT_GT(r["simulated_seconds"].get<double>(), 60.0);
  for (const char* k : {"ttft", "tpot", "e2e", "queue"})
    for (const char* p : {"mean", "p50", "p90", "p99"})
      EXPECT_TRUE(r["latency_s"][k][p].is_number()) << k << "." << p;
  for (const char* k : {"requests_per_s", "output_tokens_per_s"})
    EXPECT_GT(r["throughput"][k].get<double>(), 0) << k;
  EXPECT_TRUE(r["slo"]["attainment"].is_number());
  EXPECT_TRUE(r["slo"]["goodput_rps"].is_number());
  EXPECT_EQ(r["gpus"]["count"], 8);
  for (const char* k : {"utilization_mean", "tflops_mean", "memory_used_fraction_max"}) {
    EXPECT_GT(r["gpus"][k].get<double>(), 0) << k;
    EXPECT_LE(r["gpus"][k].get<double>(), k == std::string("tflops_mean") ? 624.0 : 1.0) << k;
  }
  ASSERT_EQ(r["gpus"]["per_gpu"].size(), 8u);
  double sum = 0;
  for (const auto& g : r["gpus"]["per_gpu"]) sum += g["utilization"].get<double>();
  EXPECT_NEAR(sum / 8, r["gpus"]["utilization_mean"].get<double>(), 1e-9);
  EXPECT_EQ(r["gpus"]["per_gpu"][7]["node"], 1);
  EXPECT_EQ(r["gpus"]["per_gpu"][7]["stage"], 1);
  EXPECT_GT(r["run"]["wall_seconds"].get<double>(), 0);
  EXPECT_GT(r["run"]["sim_speedup"].get<double>(), 0);
  expect_conservation(r);
  EXPECT_GT(r["requests"]["completed"].get<long>(), 50);
  // Latencies are ordered and TTFT is at least one prefill of the model.
  EXPECT_LE(r["latency_s"]["ttft"]["p50"].get<double>(),
            r["latency_s"]["ttft"]["p99"].get<double>());
  EXPECT_LE(r["latency_s"]["ttft"]["p99"].get<double>(),
            r["latency_s"]["e2e"]["p99"].get<double>());
  EXPECT_GT(r["latency_s"]["tpot"]["p50"].get<double>(), 0.010);  // 70B decode: > 10 ms/token

  const std::string dir = r["__dir"];
  const std::string csv = read_file(dir + "/requests.csv");
  EXPECT_EQ(count_lines(csv), r["requests"]["submitted"].get<std::size_t>() + 1);
  EXPECT_EQ(csv.rfind("id,priority,replica,outcome,", 0), 0u);
  const std::string tl = read_file(dir + "/timeline.csv");
  EXPECT_EQ(tl.rfind("t_s,arrivals,completions,", 0), 0u);
  EXPECT_GE(count_lines(tl), 61u);  // one row per simulated second
}

TEST(Simulate, SameSeedSameReportDifferentSeedDifferentReport) {
  json a = simulate("--set duration=40s", "det_a");
  json b = simulate("--set duration=40s", "det_b");
  json c = simulate("--set duration=40s --seed 43", "det_c");
  a.erase("__dir");
  b.erase("__dir");
  c.erase("__dir");
  EXPECT_EQ(without_run(a).dump(), without_run(b).dump());
  EXPECT_NE(without_run(a)["latency_s"].dump(), without_run(c)["latency_s"].dump());
  // The CSVs are deterministic too.
}

TEST(Simulate, GoldenReport) {
  // Regenerate with scripts/update-golden.sh after a deliberate model change, and say why.
  json r = simulate(source_path("tests/data/cli/golden_small.json"), "golden");
  ASSERT_FALSE(r.empty());
  r.erase("__dir");
  json expected = read_json(source_path("tests/data/cli/golden_small.report.json"));
  json got = without_run(r), want = without_run(expected);
  for (auto it = want.begin(); it != want.end(); ++it)
    EXPECT_EQ(got[it.key()].dump(), it.value().dump()) << "report key " << it.key();
  EXPECT_EQ(got.size(), want.size());
  EXPECT_GT(r["by_priority"]["high"]["requests"].get<int>(), 0);
  expect_conservation(r);
}

TEST(Simulate, ConservationWithRejections) {
  json r = simulate(source_path("tests/data/cli/rejections.json"), "rej");
  ASSERT_FALSE(r.empty());
  expect_conservation(r);
  EXPECT_GT(r["requests"]["rejected"].get<long>(), 0);
  EXPECT_GT(r["requests"]["completed"].get<long>(), 0);
  const std::string csv = read_file(r["__dir"].get<std::string>() + "/requests.csv");
  EXPECT_NE(csv.find("context limit 1024"), std::string::npos);
}

TEST(Simulate, AzureTraceReplay) {
  json r = simulate(source_path("tests/data/cli/trace_replay.json"), "trace");
  ASSERT_FALSE(r.empty());
  expect_conservation(r);
  EXPECT_GT(r["requests"]["submitted"].get<long>(), 0);
  EXPECT_EQ(r["requests"]["completed"], r["requests"]["submitted"]);
}

TEST(Simulate, ClosedLoopUsers) {
  json r = simulate(source_path("tests/data/cli/closed_loop.json"), "closed");
  ASSERT_FALSE(r.empty());
  expect_conservation(r);
  // 16 users, ~1 s think time plus service time: well under 16 req/s, well above 1.
  const double rps = r["requests"]["submitted"].get<double>() / 30.0;
  EXPECT_GT(rps, 4.0);
  EXPECT_LT(rps, 16.0);
}

TEST(Simulate, SetOverridesAnyField) {
  json r = simulate(
      "--set duration=20s --set deployment.parallel_strategy.micro_batch=8 "
      "--set workload.arrival.rate_rps=0.5",
      "set");
  ASSERT_FALSE(r.empty());
  EXPECT_EQ(r["deployment"]["micro_batch"], 8);
  EXPECT_LT(r["requests"]["submitted"].get<int>(), 25);
}

TEST(Simulate, HelpHasExamples) {
  auto r = run_prima("simulate --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("examples:"), std::string::npos);
  auto top = run_prima("--help");
  EXPECT_EQ(top.exit_code, 0);
  EXPECT_NE(top.out.find("simulate"), std::string::npos);
}

}  // namespace
}  // namespace prima::testing

namespace prima::testing {
namespace {

// /etc/bitbrick/network.conf settings change the modelled inter-node path: with TP8 over two
// 4-GPU nodes every all-reduce crosses the fabric, so TCP (rdma.enable=0) and staging through
// host memory (gpu_direct_rdma=0) slow each decode step.
TEST(Simulate, NetworkSettingsChangeTheInterNodePath) {
  // Roofline calibration: the A100 profile's fixed host costs (launch-bound layers) would
  // dilute the network's share of a step; this test is about the network path.
  auto tpot = [](const std::string& settings, const std::string& name) {
    json r = simulate(
        "--set duration=30s --set calibration='\"roofline\"' --set "
        "'deployment={\"parallel_strategy\":"
        "{\"tensor_parallel\":8}}' --set 'topology={\"base\":\"bitbrick_k1\","
        "\"settings\":" +
            settings + "}'",
        name);
    return r.empty() ? 0.0 : r["latency_s"]["tpot"]["p50"].get<double>();
  };
  const double rdma = tpot(R"({"rdma.enable":1,"gpu_direct_rdma":1,"numa_aware":1})", "rdma");
  const double tcp = tpot(R"({"rdma.enable":0,"gpu_direct_rdma":1,"numa_aware":1})", "tcp");
  const double staged = tpot(R"({"rdma.enable":1,"gpu_direct_rdma":0,"numa_aware":1})", "nogdr");
  EXPECT_GT(rdma, 0);
  EXPECT_GT(tcp, 3 * rdma);
  EXPECT_GT(staged, rdma);
}

}  // namespace
}  // namespace prima::testing
