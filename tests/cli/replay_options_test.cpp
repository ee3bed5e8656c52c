// `prima replay`'s options: the flags fill them; validate() refuses missing inputs,
// --fit-params / --fit-iterations without --fit, iterations below 1, several runs without
// --fit, a run given twice and unknown parameter names.
#include "cli/replay_options.h"

#include <gtest/gtest.h>

#include "cli/flags.h"
#include "tests/cli/options_test_util.h"

namespace prima::cli {
namespace {

namespace po = boost::program_options;

ReplayOptions parsed(const Args& args) {
  po::variables_map vm;
  std::string error;
  EXPECT_TRUE(parse_flags(args, replay_flags(), &vm, &error, nullptr)) << error;
  return replay_options(vm);
}

TEST(ReplayOptions, FlagsFillTheOptions) {
  const ReplayOptions o =
      parsed({"-m", "a.jsonl", "-m", "b.jsonl", "-s", "sc.json", "--set", "x=1", "-o", "dir",
              "--fit", "--fit-params", "gemm_memory", "--fit-iterations", "9", "--json", "-q"});
  ASSERT_TRUE(o.validate().ok()) << o.validate().message();
  EXPECT_EQ(o.measured, (std::vector<std::string>{"a.jsonl", "b.jsonl"}));
  EXPECT_EQ(o.scenario, "sc.json");
  EXPECT_EQ(o.sets, (std::vector<std::string>{"x=1"}));
  EXPECT_EQ(o.out_dir, "dir");
  EXPECT_TRUE(o.fit && o.json && o.quiet);
  EXPECT_EQ(o.fit_params, "gemm_memory");
  EXPECT_EQ(o.iterations(), 9);
  const ReplayOptions d = parsed({"-m", "a.jsonl", "-s", "sc.json"});
  ASSERT_TRUE(d.validate().ok());
  EXPECT_FALSE(d.fit || d.json || d.quiet);
  EXPECT_EQ(d.iterations(), 60);
}

TEST(ReplayOptions, ValidateNamesTheFlag) {
  EXPECT_TRUE(refused(parsed({"-m", "a.jsonl"}).validate(), "--scenario SCENARIO are required"));
  EXPECT_TRUE(refused(parsed({"-s", "sc"}).validate(), "--measured FILE and"));
  EXPECT_TRUE(refused(parsed({"-m", "a", "-s", "sc", "--fit-params", "gemm_memory"}).validate(),
                      "--fit-params and --fit-iterations need --fit"));
  EXPECT_TRUE(refused(parsed({"-m", "a", "-s", "sc", "--fit", "--fit-iterations", "0"}).validate(),
                      "--fit-iterations must be >= 1"));
  EXPECT_TRUE(refused(parsed({"-m", "a", "-m", "b", "-s", "sc"}).validate(),
                      "several --measured runs need --fit"));
  EXPECT_TRUE(refused(parsed({"-m", "a", "-m", "./a", "-s", "sc", "--fit"}).validate(),
                      "--measured ./a is given twice"));
  EXPECT_TRUE(
      refused(parsed({"-m", "a", "-s", "sc", "--fit", "--fit-params", "warp_speed"}).validate(),
              "warp_speed"));
}

}  // namespace
}  // namespace prima::cli
