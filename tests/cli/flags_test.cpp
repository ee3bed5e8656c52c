// The exit code of a failed run (flags.h): bad input (2) for an invalid argument or a missing
// file, and for a failed precondition only where the command says it is the input's; any
// other failure is 1. fail_with prints "COMMAND: message".
#include "cli/flags.h"

#include <gtest/gtest.h>

namespace prima::cli {
namespace {

TEST(Flags, ExitCodeOfAFailure) {
  EXPECT_EQ(exit_code_of(invalid_argument("x")), kExitBadInput);
  EXPECT_EQ(exit_code_of(not_found("x")), kExitBadInput);
  EXPECT_EQ(exit_code_of(failed_precondition("x")), kExitFailure);
  EXPECT_EQ(exit_code_of(failed_precondition("x"), BadInput::kAlsoPrecondition), kExitBadInput);
  EXPECT_EQ(exit_code_of(internal_error("x"), BadInput::kAlsoPrecondition), kExitFailure);
  EXPECT_EQ(exit_code_of(unavailable("x")), kExitFailure);
}

TEST(Flags, FailWithPrintsTheCommandAndTheMessage) {
  ::testing::internal::CaptureStderr();
  const int rc = fail_with("prima test", not_found("no such file: a.json"));
  EXPECT_EQ(::testing::internal::GetCapturedStderr(), "prima test: no such file: a.json\n");
  EXPECT_EQ(rc, kExitBadInput);
}

}  // namespace
}  // namespace prima::cli
