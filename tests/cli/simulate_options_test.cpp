// `prima simulate`'s options: the flags fill them (the scenario is positional, --seed N joins
// the --set overrides as seed=N); validate() refuses --html without the output files.
#include "cli/simulate_options.h"

#include <gtest/gtest.h>

#include "cli/flags.h"
#include "tests/cli/options_test_util.h"

namespace prima::cli {
namespace {

namespace po = boost::program_options;

SimulateOptions parsed(const Args& args) {
  po::options_description all;
  all.add(simulate_flags()).add(simulate_hidden_flags());
  po::positional_options_description pos;
  pos.add("scenario", 1);
  po::variables_map vm;
  std::string error;
  EXPECT_TRUE(parse_flags(args, all, &vm, &error, &pos)) << error;
  return simulate_options(vm);
}

TEST(SimulateOptions, FlagsFillTheOptions) {
  const SimulateOptions d = parsed({});
  ASSERT_TRUE(d.validate().ok());
  EXPECT_EQ(d.scenario_path, "");
  EXPECT_EQ(d.out_dir, "");
  EXPECT_TRUE(d.sets.empty());
  EXPECT_FALSE(d.no_files || d.html || d.json || d.quiet);

  const SimulateOptions o =
      parsed({"s.json", "-o", "dir", "--set", "a=1", "--seed", "7", "--html", "--json", "-q"});
  ASSERT_TRUE(o.validate().ok()) << o.validate().message();
  EXPECT_EQ(o.scenario_path, "s.json");
  EXPECT_EQ(o.out_dir, "dir");
  EXPECT_EQ(o.sets, (std::vector<std::string>{"a=1", "seed=7"}));
  EXPECT_TRUE(o.html && o.json && o.quiet && !o.no_files);
}

TEST(SimulateOptions, HtmlNeedsTheFiles) {
  SimulateOptions o = parsed({"--no-files"});
  ASSERT_TRUE(o.validate().ok());
  o.html = true;
  EXPECT_TRUE(refused(o.validate(), "--html needs the output files; drop --no-files"));
}

}  // namespace
}  // namespace prima::cli
