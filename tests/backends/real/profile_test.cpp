// `prima profile` on a small random Llama model: writes a hardware profile that the
// simulator's loaders accept (perf::load_profile_file, and as a scenario's calibration), with
// the fitted efficiencies in (0, 1], the topology GPU object of this CPU, the fitted model's
// error on the measured steps, and the measurements (operator timings for every requested
// batch size and context, each step's prediction). --topology-out and --scenario-out write a
// one-device topology and a scenario of the real server's defaults that `prima simulate` runs,
// calibrated by the profile. Bad flags and a missing model exit 2.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <regex>

#include "engine/perf/calibration.h"
#include "engine/plan/topology.h"
#include "kernels/cpu/packed.h"
#include "tests/backends/real/model_fixture.h"
#include "tests/support/run_prima.h"

namespace prima::real {
namespace {

using prima::testing::read_file;
using prima::testing::read_json;
using prima::testing::run_prima;
using prima::testing::temp_dir;

std::string random_model(const std::string& name) {
  const std::string path = temp_dir(name) + "/m.gguf";
  prima::testing::write_random_llama({}, path);
  return path;
}

// numpy's default percentile (linear between closest ranks) of unsorted values.
double percentile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  const double pos = q / 100 * (v.size() - 1);
  const std::size_t lo = static_cast<std::size_t>(pos);
  const std::size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (v[hi] - v[lo]) * (pos - lo);
}

TEST(Profile, WritesAProfileTheSimulatorReads) {
  const std::string model = random_model("profile_model");
  const std::string out = temp_dir("profile") + "/cal.json";
  auto r = run_prima("profile --model " + model + " --out " + out +
                     " --threads 1 --repeats 1 --batches 1,4 --contexts 32,64 --name testcpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fitted: gemm_memory"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("fidelity: profile testcpu: median error "), std::string::npos) << r.out;

  auto prof = perf::load_profile_file(out);
  ASSERT_TRUE(prof.ok()) << prof.status().message();
  EXPECT_EQ(prof->name, "testcpu");
  EXPECT_NE(prof->source.find("m.gguf"), std::string::npos) << prof->source;
  EXPECT_NE(prof->source.find("1 threads"), std::string::npos) << prof->source;
  for (double share : {prof->efficiency.gemm_memory, prof->efficiency.gemm_compute,
                       prof->efficiency.attention_memory}) {
    EXPECT_GT(share, 0);
    EXPECT_LE(share, 1);
  }
  // As a scenario's calibration: the same parameters and fidelity for its GPU.
  auto cal = perf::load_calibration_file(out);
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  ASSERT_EQ(cal->per_gpu.count("testcpu"), 1u);
  EXPECT_EQ(cal->per_gpu.at("testcpu").gemm_memory, prof->efficiency.gemm_memory);
  EXPECT_TRUE(perf::resolve(*cal, "testcpu").fidelity.calibrated);

  // The fidelity is the fitted model's error on every measured step.
  const auto j = read_json(out);
  const auto& steps = j["measurements"]["steps"];
  std::vector<double> errors;
  int fitted = 0;
  for (const auto& s : steps) {
    EXPECT_GT(s["seconds"].get<double>(), 0);
    EXPECT_GT(s["predicted_s"].get<double>(), 0);
    errors.push_back(std::abs(s["predicted_s"].get<double>() - s["seconds"].get<double>()) /
                     s["seconds"].get<double>());
    fitted += s["fitted"].get<bool>();
  }
  EXPECT_EQ(fitted, static_cast<int>(steps.size()));  // every step is fitted at once
  const perf::Fidelity& f = prof->fidelity;
  EXPECT_TRUE(f.calibrated);
  EXPECT_EQ(f.points, static_cast<int>(steps.size()));
  EXPECT_NEAR(f.median_abs_error, percentile(errors, 50), 1e-12);
  EXPECT_NEAR(f.p90_abs_error, percentile(errors, 90), 1e-12);
  EXPECT_NEAR(f.max_abs_error, *std::max_element(errors.begin(), errors.end()), 1e-12);
  const std::string n = std::to_string(steps.size());
  EXPECT_NE(f.calibration_data.find(n + " of the " + n + " fitted"), std::string::npos)
      << f.calibration_data;

  // The GPU object is a topology's GPU as it is (docs/real-backend.md).
  ASSERT_TRUE(prof->gpu.has_value());
  const config::Json topo = {{"name", "one-cpu"},
                             {"gpu", *prof->gpu},
                             {"nodes", 1},
                             {"node",
                              {{"gpus", 1},
                               {"nvlink", {{"bandwidth", "1GB/s"}}},
                               {"pcie", {{"bandwidth", "1GB/s"}}},
                               {"nic", {{"bandwidth", "1GB/s"}}}}},
                             {"fabric", {{"link", {{"bandwidth", "1GB/s"}}}}}};
  const plan::Topology t = plan::parse_topology(config::JsonReader(topo, "topo"));
  EXPECT_EQ(t.gpu.name, "testcpu");
  EXPECT_GT(t.gpu.hbm_bytes, 0);
  EXPECT_NEAR(t.gpu.hbm_bw_Bps / 1e9, j["measurements"]["read_bandwidth_GBps"].get<double>(), 1e-3);
  int matmul_b1 = 0, matmul_b4 = 0, attention = 0;
  for (const auto& o : j["measurements"]["operators"]) {
    const std::string op = o["op"];
    EXPECT_GT(o["seconds"].get<double>(), 0) << op;
    if (op.rfind("matmul:", 0) == 0) (o["batch"] == 1 ? matmul_b1 : matmul_b4)++;
    if (op.rfind("attention:", 0) == 0) ++attention;
  }
  EXPECT_EQ(matmul_b1, 8);  // seven linear layers and the LM head
  EXPECT_EQ(matmul_b4, 8);
  EXPECT_EQ(attention, 4);  // decode and prefill at two contexts
}

// What `prima serve --backend real --model M` announces on start: its context and limits.
struct Banner {
  int context = 0, max_num_seqs = 0, max_num_batched_tokens = 0, kv_blocks = 0, block_size = 0;
};
Banner real_server_banner(const std::string& model) {
  const std::string dir = temp_dir("profile_serve");
  // Started in the background; SIGINT (a drain with nothing in flight) once it has bound. A
  // server that does not stop is killed after two minutes (the exit code then fails the test).
  const std::string cmd = "timeout -k 10 120 " + std::string(PRIMA_BINARY) +
                          " serve --backend real --model " + model + " --port 0 --port-file " +
                          dir + "/port --kernel-threads 1 2>" + dir +
                          "/err </dev/null & pid=$!; i=0; while [ ! -s " + dir +
                          "/port ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; "
                          "kill -INT $pid; wait $pid";
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  const std::string err = read_file(dir + "/err");
  std::smatch m;
  Banner b;
  if (!std::regex_search(err, m,
                         std::regex("context (\\d+); max-num-seqs (\\d+), max-num-batched-tokens "
                                    "(\\d+), (\\d+) KV blocks of (\\d+) tokens"))) {
    ADD_FAILURE() << "no limits in the banner: " << err;
    return b;
  }
  b.context = std::stoi(m[1]);
  b.max_num_seqs = std::stoi(m[2]);
  b.max_num_batched_tokens = std::stoi(m[3]);
  b.kv_blocks = std::stoi(m[4]);
  b.block_size = std::stoi(m[5]);
  return b;
}

// profile -> simulate: the written scenario runs, on the written topology's GPU, calibrated by
// the profile, with the limits and KV cache the real server announces for the same model.
TEST(Profile, WritesATopologyAndScenarioThatSimulate) {
  const std::string model = random_model("profile_twin_model");
  const std::string dir = temp_dir("profile_twin");
  auto r = run_prima("profile --model " + model + " --out " + dir + "/p/profile.json" +
                     " --topology-out " + dir + "/t/cpu.json --scenario-out " + dir +
                     "/s/twin.json --threads 1 --repeats 1 --batches 1 --contexts 32 "
                     "--name testcpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("prima simulate " + dir + "/s/twin.json"), std::string::npos) << r.out;

  const auto topo_json = read_json(dir + "/t/cpu.json");
  const plan::Topology t = plan::parse_topology(config::JsonReader(topo_json, "cpu.json"));
  EXPECT_EQ(t.name, "cpu");
  EXPECT_EQ(t.nodes, 1);
  EXPECT_EQ(t.node.gpus, 1);
  EXPECT_EQ(t.gpu.name, "testcpu");
  EXPECT_EQ(topo_json["gpu"], read_json(dir + "/p/profile.json")["gpu"]);

  const auto sc = read_json(dir + "/s/twin.json");
  EXPECT_EQ(sc["calibration"], "../p/profile.json");  // relative to the scenario's directory
  EXPECT_EQ(sc["topology"]["gpu"], topo_json["gpu"]);
  const Banner b = real_server_banner(model);
  EXPECT_EQ(sc["scheduler"]["max_num_seqs"], b.max_num_seqs);
  EXPECT_EQ(sc["scheduler"]["max_num_batched_tokens"], b.max_num_batched_tokens);
  EXPECT_EQ(sc["scheduler"]["block_size"], b.block_size);
  EXPECT_EQ(sc["scheduler"]["max_model_len"], b.context);

  // Run from the test's working directory: the scenario inlines its topology and names the
  // profile relative to itself.
  const std::string out = dir + "/sim";
  auto s = run_prima("simulate " + dir + "/s/twin.json --out " + out + " -q");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const auto rep = read_json(out + "/report.json");
  EXPECT_EQ(rep["topology"]["gpu"], "testcpu");
  // The twin runs this machine's engine terms (p/profile.engine.json) on its hardware profile:
  // the profile's step fit is the hardware's (in-sample) error; no out-of-sample figure yet.
  EXPECT_EQ(rep["fidelity"]["engine"], "prima-cpu");
  EXPECT_EQ(rep["fidelity"]["hardware_profile"], "testcpu");
  EXPECT_EQ(rep["fidelity"]["hardware"]["points"],
            read_json(dir + "/p/profile.json")["fidelity"]["points"]);
  EXPECT_EQ(sc["engine"], "../p/profile.engine.json");
  EXPECT_NE(s.out.find("hardware profile testcpu: median "), std::string::npos) << s.out;
  EXPECT_EQ(rep["kv_cache"]["blocks_per_replica"], b.kv_blocks);
  EXPECT_EQ(rep["kv_cache"]["block_size"], b.block_size);
  EXPECT_GT(rep["requests"]["completed"].get<int>(), 0);
  EXPECT_EQ(rep["requests"]["rejected"], 0);
}

// --repack measures the packed kernels where the CPU has them; the file says which ran.
TEST(Profile, RepackMeasuresThePackedKernels) {
  const std::string model = random_model("profile_repack");
  const std::string out = temp_dir("profile_repack_out") + "/cal.json";
  auto r = run_prima("profile --model " + model + " --out " + out +
                     " --threads 1 --repeats 1 --batches 1 --contexts 32 --repack");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = read_json(out);
  const std::string isa = j["measurements"]["kernels"];
  EXPECT_EQ(isa.find("+packed") != std::string::npos,
            kernels::repack_supported(kernels::DType::kQ4_1))
      << isa;
}

TEST(Profile, BadInputExitsTwo) {
  EXPECT_EQ(run_prima("profile --out /tmp/x.json").exit_code, 2);
  EXPECT_EQ(run_prima("profile --model /nonexistent.gguf --out /tmp/x.json").exit_code, 2);
  const std::string model = random_model("profile_bad");
  auto r = run_prima("profile --model " + model + " --out /tmp/x.json --batches 1,x");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--batches"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace prima::real
