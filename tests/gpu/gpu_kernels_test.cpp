// The device checks (gpu_checks.h) as GoogleTest tests, one per check, each skipped with the
// reason when this machine has no CUDA device (ctest shows them skipped, label `gpu`), or when
// the check's path does not exist in this build ("not run: ...").
#include <gtest/gtest.h>

#include <exception>
#include <string>

#include "tests/gpu/gpu_checks.h"

namespace prima::gpu_checks {
namespace {

class GpuKernel : public ::testing::TestWithParam<std::size_t> {};

TEST_P(GpuKernel, MatchesCpu) {
  if (const std::string why = unavailable_reason(); !why.empty()) GTEST_SKIP() << why;
  const Check& c = all_checks()[GetParam()];
  CheckResult r;
  try {
    r = c.run();
  } catch (const std::exception& e) {
    FAIL() << c.name << ": " << e.what();
  }
  // A check of a path this build cannot run (tensor cores on the CPU execution layer) says so.
  if (r.ok && r.detail.rfind("not run: ", 0) == 0) GTEST_SKIP() << c.name << ": " << r.detail;
  EXPECT_TRUE(r.ok) << c.name << ": " << r.detail;
  RecordProperty("max_err_over_tolerance", std::to_string(r.max_err));
}

INSTANTIATE_TEST_SUITE_P(Kernels, GpuKernel, ::testing::Range<std::size_t>(0, all_checks().size()),
                         [](const ::testing::TestParamInfo<std::size_t>& p) {
                           return std::string(all_checks()[p.param].name);
                         });

}  // namespace
}  // namespace prima::gpu_checks
