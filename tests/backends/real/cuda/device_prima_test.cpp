// The GPU forward pass with tensor and pipeline parallelism, one process per (emulated) GPU:
// `mpirun -np N prima generate --device cuda-emu --tp T --pp P` runs every rank's share on the
// CUDA execution layer for the CPU, the stage's gathers and the hidden states between stages
// moving through host memory over the job's communicator (DeviceComm's host-staged path; NCCL
// on devices). The gathers are exact, so every layout gives the single device's ids, and those
// are the CPU path's, for quantized (Q4_1, Q8_0) and dense (F16, BF16) weights.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tests/backends/real/model_fixture.h"
#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

struct Layout {
  int tp, pp;
};

// A random Llama's logits are so peaked that its greedy ids repeat one token; sampled at
// temperature 20 with a fixed seed, the ids follow the whole distribution (the host's sampler
// draws the same numbers), so a logit that differs by a fraction shows.
const char* const kSampled = " --temperature 20 --seed 7";

// Greedy ids of `gen` on the CPU path, on one emulated device, and on the emulated devices of
// each layout: all equal. Each process's emulator runs one worker (the ranks share 2 cores).
void expect_device_layouts_give_the_cpu_ids(const std::string& gen,
                                            const std::vector<Layout>& layouts) {
  setenv("PRIMA_CUDA_EMU_WORKERS", "1", 1);
  const auto cpu = run_prima(gen + " --device cpu");
  ASSERT_EQ(cpu.exit_code, 0) << cpu.err;
  ASSERT_FALSE(cpu.out.empty());
  const auto one = run_prima(gen + " --device cuda-emu");
  ASSERT_EQ(one.exit_code, 0) << one.err;
  EXPECT_EQ(one.out, cpu.out) << "one emulated device";
  for (const Layout& l : layouts) {
    const std::string where = "--tp " + std::to_string(l.tp) + " --pp " + std::to_string(l.pp);
    const auto r = run_shell(mpirun_prima(l.tp * l.pp) + gen + " --device cuda-emu " + where);
    ASSERT_EQ(r.exit_code, 0) << where << ": " << r.err;
    EXPECT_EQ(r.out, cpu.out) << where;
    EXPECT_NE(r.err.find("rank 0 of " + where + " over host-staged"), std::string::npos)
        << where << ": " << r.err;
  }
  unsetenv("PRIMA_CUDA_EMU_WORKERS");
}

TEST(DeviceParallelEmu, RandomModelTpAndPpGiveTheCpuIds) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun not found";
  RandomLlama m;
  m.kv_heads = 4;  // TP 4 needs 4 KV heads
  m.layers = 3;
  const std::string path = temp_dir("dev_par_random") + "/m.gguf";
  write_random_llama(m, path);
  expect_device_layouts_give_the_cpu_ids(
      "generate --model " + path + " --prompt 'parallel ranks agree' --ids --max-tokens 12" +
          kSampled,
      {{2, 1}, {4, 1}, {1, 2}, {2, 2}, {1, 3}});
}

// F16 and BF16 weights go through the dense GEMM (the reference kernel here, cuBLASLt on
// devices) with the activations rounded as kernels/cpu rounds them.
TEST(DeviceParallelEmu, DenseF16AndBf16WeightsGiveTheCpuIds) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun not found";
  RandomLlama m;
  m.attn_type = kernels::DType::kBF16;
  m.ffn_type = kernels::DType::kF16;
  m.embd_type = kernels::DType::kF16;  // the tied LM head too
  const std::string path = temp_dir("dev_par_dense") + "/m.gguf";
  write_random_llama(m, path);
  expect_device_layouts_give_the_cpu_ids(
      "generate --model " + path + " --prompt 'dense weights' --ids --max-tokens 12" + kSampled,
      {{2, 1}, {1, 2}});
}

TEST(DeviceParallelEmu, SmolLM2Tp3AndPp2GiveTheCpuIds) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun not found";
  const std::string path = source_path("models/SmolLM2-135M-Instruct.Q4_1.gguf");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present (scripts/setup.sh)";
  expect_device_layouts_give_the_cpu_ids(
      "generate --model " + path + " --prompt 'The three primary colors are' --ids --max-tokens 4",
      {{3, 1}, {1, 2}});
}

// `prima profile --device cuda-emu`: the device's figures and the GPU forward pass's steps,
// fitted and written as a hardware profile, an engine and a simulated twin that simulates.
// (The emulator's speed describes nothing: this checks the path, not the figures.)
TEST(DeviceParallelEmu, ProfileMeasuresTheGpuForwardPass) {
  RandomLlama m;
  const std::string dir = temp_dir("dev_profile");
  write_random_llama(m, dir + "/m.gguf");
  setenv("PRIMA_CUDA_EMU_WORKERS", "1", 1);
  const auto r = run_prima("profile --model " + dir + "/m.gguf --device cuda-emu --repeats 1 " +
                           "--contexts 128 --out " + dir + "/p.json --topology-out " + dir +
                           "/t.json --scenario-out " + dir + "/s.json");
  unsetenv("PRIMA_CUDA_EMU_WORKERS");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("cuda-emu (prima CUDA emulator (CPU, 1 workers)): bandwidth"),
            std::string::npos)
      << r.out;
  const auto p = read_json(dir + "/p.json");
  const auto& meas = p["measurements"];
  EXPECT_EQ(meas["device"].get<std::string>().rfind("cuda-emu (prima CUDA emulator", 0), 0u)
      << meas.dump();
  EXPECT_EQ(meas["kernels"], "cuda");
  EXPECT_TRUE(meas["operators"].empty());  // no CPU operator timed for a device
  EXPECT_GE(meas["steps"].size(), 8u);
  int batch64 = 0;  // a device's profile adds decode at batch 32 and 64
  for (const auto& s : meas["steps"]) {
    EXPECT_GT(s["seconds"].get<double>(), 0) << s.dump();
    batch64 += s["kind"] == "decode" && s["seqs"] == 64;
  }
  EXPECT_EQ(batch64, 1) << meas["steps"].dump();
  EXPECT_GT(meas["read_bandwidth_GBps"].get<double>(), 0);
  EXPECT_NE(p["source"].get<std::string>().find("device-to-device copy"), std::string::npos)
      << p["source"];
  EXPECT_NE(read_json(dir + "/p.engine.json")["description"].get<std::string>().find(
                "prima's GPU forward pass on cuda-emu"),
            std::string::npos);
  const auto sim = run_prima("simulate " + dir + "/s.json --no-files -q");
  EXPECT_EQ(sim.exit_code, 0) << sim.err;
}

// Synthetic models of real shapes (--synthetic): on the emulated device the matrices are made
// by the device (synthetic_rows) from the file's metadata, whose data holds only the norms; the
// CPU path reads the written file. The greedy ids are the same, for BF16 (the dense GEMM) and
// Q4_1 weights (also at TP 2), and for SmolLM2-135M's shape (30 layers, 9 heads over 3 KV heads)
// in BF16; the device's file is a few blocks on disk, and the CPU path refuses it.
TEST(DeviceParallelEmu, SyntheticModelsGiveTheCpuIds) {
  const std::string dir = temp_dir("dev_synthetic");
  setenv("PRIMA_SYNTHETIC_DIR", dir.c_str(), 1);
  for (const char* spec : {"tiny:bf16", "tiny:q4_1", "smollm2-135m:bf16"}) {
    const std::string gen = std::string("generate --synthetic ") + spec +
                            " --prompt 'The capital of France is' --ids --max-tokens 6";
    const auto cpu = run_prima(gen + " --device cpu");
    ASSERT_EQ(cpu.exit_code, 0) << spec << ": " << cpu.err;
    const auto dev = run_prima(gen + " --device cuda-emu");
    ASSERT_EQ(dev.exit_code, 0) << spec << ": " << dev.err;
    EXPECT_NE(dev.err.find("synthetic weights made on the device"), std::string::npos) << dev.err;
    EXPECT_EQ(dev.out, cpu.out) << spec;
    EXPECT_EQ(std::count(cpu.out.begin(), cpu.out.end(), ' '), 5) << spec << ": " << cpu.out;
    if (std::string(spec) != "tiny:q4_1" || !have_mpirun()) continue;
    // TP 2: each rank makes its rows of every matrix (the slice's first row in the tensor).
    setenv("PRIMA_CUDA_EMU_WORKERS", "1", 1);
    const auto tp = run_shell(mpirun_prima(2) + gen + " --device cuda-emu --tp 2");
    unsetenv("PRIMA_CUDA_EMU_WORKERS");
    ASSERT_EQ(tp.exit_code, 0) << tp.err;
    EXPECT_EQ(tp.out, cpu.out) << "TP 2";
  }
  // smollm2-135m:bf16's 269 MB of matrices are a hole in its device file.
  const std::string device_file = dir + "/smollm2-135m-bf16-s1-device.gguf";
  struct stat st {};
  ASSERT_EQ(::stat(device_file.c_str(), &st), 0) << device_file;
  EXPECT_GT(st.st_size, 269'000'000);
  EXPECT_LT(std::int64_t(st.st_blocks) * 512, 8'000'000) << "bytes on disk";
  const auto refused = run_prima("generate --model " + device_file + " --prompt hi --device cpu");
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.err.find("holds no weight data"), std::string::npos) << refused.err;
  unsetenv("PRIMA_SYNTHETIC_DIR");
}

// Sampling on the device (sample_rows): greedy with penalties aside (generate has none), plain
// temperature, top-k with top-p, and top-p alone draw the ids the host's sampler draws from the
// same logits (PRIMA_DEVICE_SAMPLING=0 sends every row to the host) over three sequences and
// ten steps. Against the CPU path the ids may part where a tiny random model's near-flat
// distribution meets the float-order differences of the logits, so the host is the reference.
TEST(DeviceParallelEmu, SampledDrawsGiveTheHostSamplersIds) {
  setenv("PRIMA_SYNTHETIC_DIR", temp_dir("dev_sampled").c_str(), 1);
  for (const char* mode :
       {" --temperature 1.1 --seed 2", " --temperature 0.9 --top-k 40 --top-p 0.9 --seed 3",
        " --temperature 1.1 --top-p 0.8 --seed 11"}) {
    const std::string gen = std::string("generate --synthetic tiny:bf16") +
                            " --prompt 'Sampling on the device' --ids --max-tokens 10 --batch 3" +
                            mode + " --device cuda-emu";
    setenv("PRIMA_DEVICE_SAMPLING", "0", 1);
    const auto host = run_prima(gen);
    unsetenv("PRIMA_DEVICE_SAMPLING");
    ASSERT_EQ(host.exit_code, 0) << mode << ": " << host.err;
    const auto dev = run_prima(gen);
    ASSERT_EQ(dev.exit_code, 0) << mode << ": " << dev.err;
    EXPECT_EQ(dev.out, host.out) << mode;
    EXPECT_EQ(std::count(dev.out.begin(), dev.out.end(), ' '), 9) << mode << ": " << dev.out;
  }
  unsetenv("PRIMA_SYNTHETIC_DIR");
}

// scripts/gpu_forward_check.py, the forward stage of scripts/gpu_check.sh, run on the emulated
// device: the token and sampling checks pass and the profiles' decode figures (BF16, FP8, INT8,
// W4A16) are computed (their values describe the emulator), the weights' bytes read from the file
// the device made them from (its apparent size: the matrices are a hole).
TEST(DeviceParallelEmu, GpuForwardCheckScriptRunsOnTheEmulator) {
  const std::string dir = temp_dir("dev_forward_check");
  setenv("PRIMA_CUDA_EMU_WORKERS", "1", 1);
  const auto r = run_shell("python3 " + source_path("scripts/gpu_forward_check.py") + " --prima " +
                           PRIMA_BINARY +
                           " --device cuda-emu --token-models tiny:q4_1 --tokens 6 --big "
                           "tiny:bf16 --contexts 128 --repeats 1 --out-dir " +
                           dir + " --json " + dir + "/f.json");
  unsetenv("PRIMA_CUDA_EMU_WORKERS");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const auto j = read_json(dir + "/f.json");
  EXPECT_EQ(j["status"], "passed");
  ASSERT_EQ(j["tokens"].size(), 1u);
  EXPECT_EQ(j["tokens"][0]["equal_prefix"], 6) << j["tokens"].dump();
  const auto& f = j["speed"]["figures"]["decode_b1"];
  EXPECT_GT(f["seconds"].get<double>(), 0) << j["speed"].dump();
  EXPECT_GT(f["fraction_of_hbm_peak"].get<double>(), 0);
  EXPECT_EQ(j["speed_fp8"]["fp8"], true);  // the same profile with --quantization fp8
  EXPECT_GT(j["speed_fp8"]["figures"]["decode_b1"]["seconds"].get<double>(), 0)
      << j["speed_fp8"].dump();
  EXPECT_EQ(j["speed_int8"]["quantization"], "int8");  // and with --quantization int8
  EXPECT_GT(j["speed_int8"]["figures"]["decode_b1"]["seconds"].get<double>(), 0)
      << j["speed_int8"].dump();
  EXPECT_EQ(j["speed_w4a16"]["quantization"], "w4a16");  // and with --quantization w4a16
  EXPECT_GT(j["speed_w4a16"]["figures"]["decode_b1"]["seconds"].get<double>(), 0)
      << j["speed_w4a16"].dump();
  EXPECT_LT(j["speed_w4a16"]["weight_bytes"], j["speed_int8"]["weight_bytes"]);
  EXPECT_EQ(j["speed"]["weight_bytes"],
            std::filesystem::file_size(dir + "/synthetic/tiny-bf16-s1-device.gguf"));
  EXPECT_EQ(j["sampling"]["equal"], true) << j["sampling"].dump();  // device = host sampler
  EXPECT_EQ(j["sampling"]["device_ids"].size(), 6u);
}

// --quantization fp8 on a device before sm_89 (the emulator told to be an A100), refused before
// any model is made, and on a model with no F16/BF16 matrices: exit 2 with the reason.
TEST(DeviceParallelEmu, Fp8RefusalsExitTwo) {
  const std::string synthetic = temp_dir("dev_fp8_refusals");
  setenv("PRIMA_SYNTHETIC_DIR", synthetic.c_str(), 1);
  setenv("PRIMA_CUDA_EMU_SM", "80", 1);
  auto r = run_prima("generate --synthetic tiny --prompt x --device cuda-emu --quantization fp8");
  unsetenv("PRIMA_CUDA_EMU_SM");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("prima generate: --quantization fp8: prima CUDA emulator"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("is sm_80, and FP8 tensor cores need sm_89 or later"), std::string::npos)
      << r.err;
  EXPECT_TRUE(std::filesystem::is_empty(synthetic)) << "a model was made before the refusal";
  r = run_prima("generate --synthetic tiny:q4_1 --prompt x --device cuda-emu --quantization fp8");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("this model's layers have none (its layer 0 attn_q is Q4_1)"),
            std::string::npos)
      << r.err;
  unsetenv("PRIMA_SYNTHETIC_DIR");
}

const char* const kBf16Gen =
    "generate --synthetic tiny:bf16 --prompt 'The capital of France is' --ids --max-tokens 6 "
    "--device cuda-emu";

// --quantization q (int8, w4a16) refused with exit 2 on a model whose layers have no F16/BF16
// matrix and on the CPU, whose message names `kernels`.
void expect_quantization_refusals(const std::string& q, const std::string& kernels) {
  const auto q4 =
      run_prima("generate --synthetic tiny:q4_1 --prompt x --device cuda-emu --quantization " + q);
  EXPECT_EQ(q4.exit_code, 2) << q4.err;
  EXPECT_NE(q4.err.find("--quantization " + q +
                        " quantizes F16 and BF16 weight matrices, and this model's layers have "
                        "none (its layer 0 attn_q is Q4_1)"),
            std::string::npos)
      << q4.err;
  const auto cpu =
      run_prima("generate --synthetic tiny:bf16 --prompt x --device cpu --quantization " + q);
  EXPECT_EQ(cpu.exit_code, 2) << cpu.err;
  EXPECT_NE(cpu.err.find("--quantization " + q + " runs on a device"), std::string::npos)
      << cpu.err;
  EXPECT_NE(cpu.err.find("no " + kernels + " kernels"), std::string::npos) << cpu.err;
}

// --quantization int8 (W8A8) on the emulated device: BF16 weights run, the greedy ids of a
// tiny random model stay the BF16 run's (its logits move by about 3%, far less than its
// margins here), and a model without F16/BF16 layer matrices is refused with exit 2.
TEST(DeviceParallelEmu, Int8WeightsRunAndRefuseBlockQuantizedModels) {
  setenv("PRIMA_SYNTHETIC_DIR", temp_dir("dev_int8").c_str(), 1);
  const auto bf16 = run_prima(kBf16Gen);
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  const auto int8 = run_prima(std::string(kBf16Gen) + " --quantization int8");
  ASSERT_EQ(int8.exit_code, 0) << int8.err;
  EXPECT_EQ(int8.out, bf16.out);
  expect_quantization_refusals("int8", "INT8 W8A8");
  unsetenv("PRIMA_SYNTHETIC_DIR");
}

// --quantization w4a16 on the emulated device: BF16 weights run as 4-bit groups (the first id
// is the BF16 run's; later ones may part, a tiny random model's margins being smaller than 4-bit
// rounding), also under TP 2, where each rank quantizes its rows; a block-quantized model and the
// CPU are refused with exit 2.
TEST(DeviceParallelEmu, W4A16WeightsRunAndRefuseBlockQuantizedModels) {
  setenv("PRIMA_SYNTHETIC_DIR", temp_dir("dev_w4a16").c_str(), 1);
  const auto bf16 = run_prima(kBf16Gen);
  ASSERT_EQ(bf16.exit_code, 0) << bf16.err;
  const std::string gen = std::string(kBf16Gen) + " --quantization w4a16";
  const auto w4 = run_prima(gen);
  ASSERT_EQ(w4.exit_code, 0) << w4.err;
  EXPECT_EQ(std::count(w4.out.begin(), w4.out.end(), ' '), 5) << w4.out;
  EXPECT_EQ(w4.out.substr(0, w4.out.find(' ')), bf16.out.substr(0, bf16.out.find(' ')));
  if (have_mpirun()) {
    setenv("PRIMA_CUDA_EMU_WORKERS", "1", 1);
    const auto tp = run_shell(mpirun_prima(2) + gen + " --tp 2");
    unsetenv("PRIMA_CUDA_EMU_WORKERS");
    ASSERT_EQ(tp.exit_code, 0) << tp.err;
    EXPECT_EQ(tp.out, w4.out) << "TP 2";
  }
  expect_quantization_refusals("w4a16", "W4A16");
  unsetenv("PRIMA_SYNTHETIC_DIR");
}

// cuda:N names one GPU; a job of several ranks takes one GPU per rank (plain cuda).
TEST(DeviceParallelEmu, OneNamedGpuForSeveralRanksExitsTwo) {
  const auto r = run_prima("generate --model m.gguf --prompt hi --device cuda:0 --tp 2");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("--device cuda:0 names one GPU, and --tp 2 --pp 1 runs one rank per GPU: "
                       "use --device cuda"),
            std::string::npos)
      << r.err;
}

}  // namespace
}  // namespace prima::testing
