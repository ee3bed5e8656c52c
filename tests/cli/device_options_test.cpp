// --device on `prima generate`, `prima profile` and `prima serve --backend real`: cpu by
// default, a bad value refused naming the flag, and, where this machine cannot run it,
// --device cuda refused at once with exit 2 and one line saying why (no CUDA build, no CUDA
// device) before the model is opened.
#include "cli/device_options.h"

#include <gtest/gtest.h>

#include <string>

#include "backends/real/device.h"
#include "cli/flags.h"
#include "cli/generate_options.h"
#include "cli/profile_options.h"
#include "cli/serve_options.h"
#include "tests/cli/options_test_util.h"
#include "tests/support/run_prima.h"

namespace prima::cli {
namespace {

using prima::testing::run_prima;

template <typename Options>
Options parse(const boost::program_options::options_description& flags, const Args& args,
              Options (*fill)(const boost::program_options::variables_map&)) {
  boost::program_options::variables_map vm;
  std::string error;
  EXPECT_TRUE(parse_flags(args, flags, &vm, &error)) << error;
  return fill(vm);
}

TEST(DeviceOptions, CpuIsTheDefaultEverywhere) {
  const auto g = parse(generate_flags(), {"--model", "m.gguf", "--prompt", "hi"}, generate_options);
  EXPECT_EQ(g.device.text, "cpu");
  EXPECT_TRUE(g.validate().ok());
  const auto p = parse(profile_flags(), {"--model", "m.gguf", "--out", "o.json"}, profile_options);
  EXPECT_EQ(p.device.text, "cpu");
  const auto s = parse(serve_flags(), {"--backend", "real", "--model", "m.gguf"}, serve_options);
  EXPECT_EQ(s.device.text, "cpu");
  EXPECT_TRUE(s.validate().ok());
  EXPECT_FALSE(device_unavailable("prima test", g.device).has_value());
}

TEST(DeviceOptions, BadValuesAreRefusedNamingTheFlag) {
  const auto g = parse(generate_flags(), {"--model", "m", "--prompt", "p", "--device", "gpu"},
                       generate_options);
  EXPECT_TRUE(refused(g.validate(), "--device gpu: must be cpu, cuda, cuda:N"));
  const auto p =
      parse(profile_flags(), {"--model", "m", "--out", "o", "--device", "cuda:x"}, profile_options);
  EXPECT_TRUE(refused(p.validate(), "--device cuda:x"));
  const auto s = parse(serve_flags(), {"--backend", "sim", "--device", "cuda"}, serve_options);
  EXPECT_TRUE(refused(s.validate(), "--device applies to --backend real only"));
  const auto c = parse(generate_flags(), {"--model", "m", "--prompt", "p", "--device", "cuda:1"},
                       generate_options);
  EXPECT_TRUE(c.validate().ok());
  EXPECT_EQ(c.device.spec().index, 1);
}

// A job of several ranks runs one rank per GPU: plain cuda (each rank its local rank's GPU) and
// cuda-emu take --tp/--pp; cuda:N, one named GPU, does not.
// --quantization fp8 or int8 needs a device, and those are the values.
TEST(DeviceOptions, QuantizationIsFp8OrInt8OnADevice) {
  const auto ok = parse(
      generate_flags(),
      {"--model", "m.gguf", "--prompt", "hi", "--device", "cuda-emu", "--quantization", "fp8"},
      generate_options);
  EXPECT_TRUE(ok.validate().ok()) << ok.validate().message();
  EXPECT_TRUE(ok.device.fp8());
  EXPECT_EQ(ok.device.quant(), real::WeightQuant::kFp8);
  const auto i8 = parse(
      generate_flags(),
      {"--model", "m.gguf", "--prompt", "hi", "--device", "cuda-emu", "--quantization", "int8"},
      generate_options);
  EXPECT_TRUE(i8.validate().ok()) << i8.validate().message();
  EXPECT_EQ(i8.device.quant(), real::WeightQuant::kInt8);
  const auto i8_cpu =
      parse(generate_flags(), {"--model", "m.gguf", "--prompt", "hi", "--quantization", "int8"},
            generate_options);
  EXPECT_TRUE(refused(i8_cpu.validate(), "--quantization int8 runs on a device"));
  const auto cpu =
      parse(generate_flags(), {"--model", "m.gguf", "--prompt", "hi", "--quantization", "fp8"},
            generate_options);
  EXPECT_TRUE(refused(cpu.validate(), "--quantization fp8 runs on a device"));
  const auto bad = parse(
      profile_flags(),
      {"--model", "m.gguf", "--out", "o.json", "--device", "cuda:0", "--quantization", "int4"},
      profile_options);
  EXPECT_TRUE(
      refused(bad.validate(),
              "--quantization int4: the quantizations applied at load are fp8, int8 and w4a16"));
  const auto w4 = parse(
      generate_flags(),
      {"--model", "m.gguf", "--prompt", "hi", "--device", "cuda-emu", "--quantization", "w4a16"},
      generate_options);
  EXPECT_TRUE(w4.validate().ok()) << w4.validate().message();
  EXPECT_EQ(w4.device.quant(), real::WeightQuant::kW4A16);
  const auto sim =
      parse(serve_flags(), {"--backend", "sim", "--quantization", "fp8"}, serve_options);
  EXPECT_TRUE(refused(sim.validate(), "--quantization applies to --backend real only"));
}

TEST(DeviceOptions, SeveralRanksTakeOneGpuEach) {
  const auto named =
      parse(serve_flags(), {"--backend", "real", "--model", "m", "--device", "cuda:0", "--tp", "2"},
            serve_options);
  EXPECT_TRUE(refused(named.validate(),
                      "--device cuda:0 names one GPU, and --tp 2 --pp 1 runs one rank per GPU: use "
                      "--device cuda"));
  const auto plain =
      parse(generate_flags(),
            {"--model", "m", "--prompt", "p", "--device", "cuda", "--tp", "3", "--pp", "2"},
            generate_options);
  EXPECT_TRUE(plain.validate().ok());
  const auto emu = parse(generate_flags(),
                         {"--model", "m", "--prompt", "p", "--device", "cuda-emu", "--pp", "2"},
                         generate_options);
  EXPECT_TRUE(emu.validate().ok());
  auto one = real::device_for_rank(*real::parse_device("cuda:3"));
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, 3);  // a named GPU, whatever the local rank
}

// The reason the build and machine give for --device cuda (this machine's; the tests below
// that use it skip on a machine with a CUDA device, where nothing is refused).
std::string expected_reason() {
  if (!real::cuda_built()) return "no CUDA build";
  const std::string m = real::check_device({real::DeviceKind::kCuda, 0}).message();
  return m.substr(0, m.find(" ("));
}

void expect_refused(const std::string& args, const std::string& command) {
  const auto r = run_prima(args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.err;
  EXPECT_EQ(r.out, "");
  const std::string want = command + ": --device cuda: " + expected_reason();
  EXPECT_EQ(r.err.rfind(want, 0), 0u) << r.err << "\nwant: " << want;
  EXPECT_EQ(r.err.find('\n'), r.err.size() - 1) << "one line: " << r.err;
}

TEST(DeviceOptions, CudaFailsCleanlyWithOneLine) {
  if (real::check_device({real::DeviceKind::kCuda, 0}).ok())
    GTEST_SKIP() << "this machine has a CUDA device: --device cuda runs";
  // The model need not exist: the device is refused before it is opened.
  expect_refused("generate --model missing.gguf --prompt hi --device cuda", "prima generate");
  expect_refused("profile --model missing.gguf --out /dev/null --device cuda", "prima profile");
  expect_refused("serve --backend real --model missing.gguf --port 0 --device cuda", "prima serve");
}

TEST(DeviceOptions, HelpShowsTheFlagAndAnExample) {
  for (const char* cmd : {"generate", "profile", "serve"}) {
    const auto r = run_prima(std::string(cmd) + " --help");
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find("--device"), std::string::npos) << cmd;
    EXPECT_NE(r.out.find("--device cuda"), std::string::npos) << cmd << ": an example";
  }
}

}  // namespace
}  // namespace prima::cli
