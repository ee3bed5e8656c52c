// `prima calibrate`'s options: the flags fill them with their defaults; --set, --fit and
// --bound are checked by validate() (naming the flag and the bad text) and converted after.
#include "cli/calibrate_options.h"

#include <gtest/gtest.h>

#include "cli/flags.h"
#include "tests/cli/options_test_util.h"

namespace prima::cli {
namespace {

CalibrateOptions parsed(const Args& args) {
  boost::program_options::variables_map vm;
  std::string error;
  EXPECT_TRUE(parse_flags(args, calibrate_flags(), &vm, &error)) << error;
  return calibrate_options(vm);
}

TEST(CalibrateOptions, FlagsFillTheOptions) {
  const CalibrateOptions d = parsed({});
  ASSERT_TRUE(d.validate().ok()) << d.validate().message();
  EXPECT_EQ(d.points_file, "data/calibration/published.json");
  EXPECT_EQ(d.gpu, "");
  EXPECT_FALSE(d.fit || d.profile || d.sources || d.out);
  EXPECT_EQ(d.fit_settings.iterations, 2000);
  EXPECT_EQ(d.fit_settings.starts, 40);
  EXPECT_DOUBLE_EQ(d.fit_settings.max_error, 0);
  EXPECT_TRUE(d.overrides().empty());
  EXPECT_TRUE(d.fit_space().fields.empty());

  const CalibrateOptions o =
      parsed({"--gpu", "A100-SXM4-80GB", "--sources", "S2, S3,", "--set", "step_overhead_s=4ms",
              "--set", "gemm_compute=0.5", "--fit", "seq_overhead_s,step_overhead_s", "--bound",
              "step_overhead_s=1ms:10ms", "--starts", "3", "--max-error", "0.09", "--out", "p.json",
              "--json"});
  ASSERT_TRUE(o.validate().ok()) << o.validate().message();
  EXPECT_EQ(o.source_ids(), (std::vector<std::string>{"S2", "S3"}));
  const auto sets = o.overrides();
  ASSERT_EQ(sets.size(), 2u);
  EXPECT_STREQ(sets[0].first->name, "step_overhead_s");
  EXPECT_DOUBLE_EQ(sets[0].second, 0.004);
  EXPECT_DOUBLE_EQ(sets[1].second, 0.5);
  const FitSpace space = o.fit_space();
  ASSERT_EQ(space.fields.size(), 2u);
  EXPECT_STREQ(space.fields[1]->name, "step_overhead_s");
  EXPECT_DOUBLE_EQ(space.bounds[1].lo, 0.001);
  EXPECT_DOUBLE_EQ(space.bounds[1].hi, 0.01);
  EXPECT_EQ(space.bounds[0].hi, fit_default_bound(*space.fields[0]).hi);
  EXPECT_EQ(o.fit_settings.starts, 3);
  EXPECT_TRUE(o.json);
}

TEST(CalibrateOptions, EachBadValueNamesTheFlag) {
  struct Case {
    Args args;
    std::string want;
  };
  const Args fit = {"--gpu", "G", "--out", "p.json", "--fit", "gemm_compute"};
  auto with_fit = [&](Args extra) {
    Args a = fit;
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  const std::vector<Case> cases = {
      {{"--set", "nonsense=1"}, "--set nonsense=1: expected PARAMETER=VALUE"},
      {{"--set", "gemm_compute"}, "--set gemm_compute: expected PARAMETER=VALUE"},
      {{"--set", "step_overhead_s=fast"}, "--set step_overhead_s=fast: 'fast' is not a value"},
      {{"--fit", "gemm_compute", "--out", "p.json"}, "--fit needs --gpu"},
      {{"--fit", "gemm_compute", "--gpu", "G"}, "--fit needs --out FILE"},
      {{"--gpu", "G", "--out", "p.json", "--fit", "nonsense"},
       "--fit: unknown parameter 'nonsense'"},
      {with_fit({"--bound", "gemm_memory=0.1:0.5"}),
       "--bound gemm_memory=0.1:0.5: expected KEY=LO:HI"},
      {with_fit({"--bound", "gemm_compute=0.5"}), "expected KEY=LO:HI"},
      {with_fit({"--bound", "gemm_compute=0.5:0.1"}), "LO and HI must be values with LO < HI"},
      {with_fit({"--max-error", "-1"}), "--max-error: expected a log error >= 0"},
      {{"--write-fidelity", "--gpu", "G"}, "--write-fidelity needs --gpu and --out"},
      {{"--write-fidelity", "--out", "p.json"}, "--write-fidelity needs --gpu and --out"},
  };
  for (const auto& c : cases) {
    EXPECT_TRUE(refused(parsed(c.args).validate(), c.want));
  }
  // Without --fit, --bound and --max-error are not looked at.
  EXPECT_TRUE(parsed({"--bound", "x", "--max-error", "-1"}).validate().ok());
}

}  // namespace
}  // namespace prima::cli
