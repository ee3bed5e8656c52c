// `prima profile`'s options: the flags fill the profiler's options and the output paths with
// their defaults; validate() refuses each bad value naming the flag.
#include "cli/profile_options.h"

#include <gtest/gtest.h>

#include <functional>

#include "cli/flags.h"
#include "tests/cli/options_test_util.h"

namespace prima::cli {
namespace {

ProfileOptions parsed(const Args& args) {
  boost::program_options::variables_map vm;
  std::string error;
  EXPECT_TRUE(parse_flags(args, profile_flags(), &vm, &error)) << error;
  return profile_options(vm);
}

TEST(ProfileOptions, FlagsFillTheOptions) {
  const ProfileOptions d = parsed({"--model", "m.gguf", "--out", "p.json"});
  ASSERT_TRUE(d.validate().ok()) << d.validate().message();
  EXPECT_EQ(d.profile.model_path, "m.gguf");
  EXPECT_EQ(d.out, "p.json");
  EXPECT_EQ(d.profile.batches, (std::vector<int>{1, 2, 4, 8, 16, 32, 64, 128}));
  EXPECT_EQ(d.profile.contexts, (std::vector<int>{128, 512, 1024, 2048}));
  EXPECT_EQ(d.profile.repeats, 5);
  EXPECT_TRUE(d.profile.repack);  // packing is the default
  EXPECT_EQ(d.topology_out, "");

  const ProfileOptions o =
      parsed({"--model", "m.gguf", "--out", "p.json", "--threads", "2", "--batches", "1,8,64",
              "--contexts", "256", "--repeats", "3", "--name", "cpu:x", "--no-repack",
              "--topology-out", "t.json", "--scenario-out", "s.json"});
  ASSERT_TRUE(o.validate().ok()) << o.validate().message();
  EXPECT_EQ(o.profile.threads, 2);
  EXPECT_EQ(o.profile.batches, (std::vector<int>{1, 8, 64}));
  EXPECT_EQ(o.profile.contexts, (std::vector<int>{256}));
  EXPECT_EQ(o.profile.repeats, 3);
  EXPECT_EQ(o.profile.name, "cpu:x");
  EXPECT_FALSE(o.profile.repack);
  EXPECT_EQ(o.topology_out, "t.json");
  EXPECT_EQ(o.scenario_out, "s.json");
}

TEST(ProfileOptions, EachBadValueNamesTheFlag) {
  struct Case {
    Args extra;
    std::string want;
  };
  const std::string lists = "--batches and --contexts take positive integers";
  const std::vector<Case> cases = {
      {{"--repack", "--no-repack"}, "--repack and --no-repack exclude each other"},
      {{"--threads", "-1"}, "--threads must be >= 0"},
      {{"--repeats", "0"}, "--repeats >= 1"},
      {{"--batches", "1,x"}, lists},
      {{"--batches", "1,0"}, lists},
      {{"--contexts", ""}, lists},
      {{"--contexts", "8,,16"}, lists},
  };
  for (const auto& c : cases) {
    Args args = {"--model", "m.gguf", "--out", "p.json"};
    args.insert(args.end(), c.extra.begin(), c.extra.end());
    EXPECT_TRUE(refused(parsed(args).validate(), c.want));
  }
  for (const Args& args : {Args{"--model", "m.gguf"}, Args{"--out", "p.json"}}) {
    EXPECT_TRUE(
        refused(parsed(args).validate(), "--model (or --synthetic) and --out are required"));
  }
}

}  // namespace
}  // namespace prima::cli
