// `prima plan`'s options: the flags fill them (the plan file is positional, --shard is "i/n");
// validate() refuses each bad value naming the flag and the value.
#include "cli/plan_options.h"

#include <gtest/gtest.h>

#include "cli/flags.h"

namespace prima::cli {
namespace {

namespace po = boost::program_options;

PlanOptions parsed(const Args& args) {
  po::options_description all;
  all.add(plan_flags()).add(plan_hidden_flags());
  po::positional_options_description pos;
  pos.add("plan", 1);
  po::variables_map vm;
  std::string error;
  EXPECT_TRUE(parse_flags(args, all, &vm, &error, &pos)) << error;
  return plan_options(vm);
}

TEST(PlanOptions, FlagsFillTheOptions) {
  const PlanOptions o =
      parsed({"p.json", "-o", "dir", "-j", "3", "--shard", "2/5", "-q", "--max-simulations", "4"});
  ASSERT_TRUE(o.validate().ok()) << o.validate().message();
  EXPECT_EQ(o.plan_path, "p.json");
  EXPECT_EQ(o.out_dir, "dir");
  EXPECT_EQ(o.jobs, 3);
  EXPECT_EQ(o.shard_index, 2);
  EXPECT_EQ(o.shard_count, 5);
  EXPECT_TRUE(o.quiet);
  EXPECT_EQ(o.max_simulations, 4);
  const PlanOptions d = parsed({"p.json"});
  EXPECT_GE(d.jobs, 1);  // the number of cores
  EXPECT_EQ(d.shard_count, 1);
  EXPECT_EQ(d.max_simulations, -1);
}

TEST(PlanOptions, EachBadValueNamesTheFlag) {
  EXPECT_EQ(parsed({}).validate().message(), "missing PLAN.json (see prima plan --help)");
  EXPECT_EQ(parsed({"p.json", "--jobs", "0"}).validate().message(),
            "--jobs 0: expected at least 1");
  for (const char* shard : {"2/2", "abc", "1/0", "-1/3", "3"})
    EXPECT_EQ(parsed({"p.json", "--shard", shard}).validate().message(),
              std::string("--shard ") + shard + ": expected i/n with 0 <= i < n, e.g. 3/16");
  PlanOptions o;
  o.plan_path = "p.json";
  o.shard_index = 4;
  o.shard_count = 4;
  EXPECT_EQ(o.validate().message(), "--shard 4/4: expected i/n with 0 <= i < n, e.g. 3/16");
  EXPECT_EQ(
      parsed({"p.json", "--shard", "1/4", "--emit-helm-values", "v.yaml"}).validate().message(),
      "--emit-helm-values needs the whole ranking: give it to the merging run (without "
      "--shard)");
  const PlanOptions h = parsed({"p.json", "--emit-helm-values", "v.yaml"});
  EXPECT_TRUE(h.validate().ok());
  EXPECT_EQ(h.helm_values_path, "v.yaml");
}

}  // namespace
}  // namespace prima::cli
