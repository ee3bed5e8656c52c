// `prima profile` on a small random Llama model: writes a calibration file that the
// simulator's loader accepts, with the fitted efficiencies in (0, 1], the hardware object,
// operator timings for every requested batch size and context, and each step's prediction.
// Bad flags and a missing model exit 2.
#include <gtest/gtest.h>

#include "engine/perf/calibration.h"
#include "engine/plan/topology.h"
#include "kernels/cpu/packed.h"
#include "tests/backends/real/model_fixture.h"
#include "tests/support/run_prima.h"

namespace prima::real {
namespace {

using prima::testing::read_json;
using prima::testing::run_prima;
using prima::testing::temp_dir;

std::string random_model(const std::string& name) {
  const std::string path = temp_dir(name) + "/m.gguf";
  prima::testing::write_random_llama({}, path);
  return path;
}

TEST(Profile, WritesACalibrationTheSimulatorReads) {
  const std::string model = random_model("profile_model");
  const std::string out = temp_dir("profile") + "/cal.json";
  auto r = run_prima("profile --model " + model + " --out " + out +
                     " --threads 1 --repeats 1 --batches 1,4 --contexts 32,64 --name testcpu");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("fitted: gemm_memory"), std::string::npos) << r.out;

  auto cal = perf::load_calibration_file(out);
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  ASSERT_EQ(cal->per_gpu.count("testcpu"), 1u);
  const perf::Efficiency& e = cal->per_gpu.at("testcpu");
  for (double share : {e.gemm_memory, e.gemm_compute, e.attention_memory}) {
    EXPECT_GT(share, 0);
    EXPECT_LE(share, 1);
  }

  const auto j = read_json(out);
  EXPECT_EQ(j["hardware"]["name"], "testcpu");
  // The hardware object is a topology's GPU as it is (docs/real-backend.md).
  const config::Json topo = {{"name", "one-cpu"},
                             {"gpu", j["hardware"]},
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
  EXPECT_GT(t.gpu.hbm_bw_Bps, 0);
  EXPECT_GT(j["profile"]["read_bandwidth_GBps"].get<double>(), 0);
  int matmul_b1 = 0, matmul_b4 = 0, attention = 0;
  for (const auto& o : j["profile"]["operators"]) {
    const std::string op = o["op"];
    EXPECT_GT(o["seconds"].get<double>(), 0) << op;
    if (op.rfind("matmul:", 0) == 0) (o["batch"] == 1 ? matmul_b1 : matmul_b4)++;
    if (op.rfind("attention:", 0) == 0) ++attention;
  }
  EXPECT_EQ(matmul_b1, 8);  // seven linear layers and the LM head
  EXPECT_EQ(matmul_b4, 8);
  EXPECT_EQ(attention, 4);  // decode and prefill at two contexts
  int fitted = 0;
  for (const auto& s : j["profile"]["steps"]) {
    EXPECT_GT(s["seconds"].get<double>(), 0);
    EXPECT_GT(s["predicted_s"].get<double>(), 0);
    fitted += s["fitted"].get<bool>();
  }
  EXPECT_EQ(fitted, 3);
}

// --repack measures the packed kernels where the CPU has them; the file says which ran.
TEST(Profile, RepackMeasuresThePackedKernels) {
  const std::string model = random_model("profile_repack");
  const std::string out = temp_dir("profile_repack_out") + "/cal.json";
  auto r = run_prima("profile --model " + model + " --out " + out +
                     " --threads 1 --repeats 1 --batches 1 --contexts 32 --repack");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = read_json(out);
  const std::string isa = j["profile"]["kernels"];
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
