// What the options tests of tests/cli/ (*_options_test.cpp) check of a refused value:
// validate() failed as bad input (kInvalidArgument) with a message that contains `want` (the
// flag and its bad value). Header-only; for gtest assertions.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "engine/core/status.h"

namespace prima::cli {

inline ::testing::AssertionResult refused(const Status& st, const std::string& want) {
  if (st.ok()) return ::testing::AssertionFailure() << "accepted; expected: " << want;
  if (st.code() != StatusCode::kInvalidArgument)
    return ::testing::AssertionFailure()
           << status_code_name(st.code()) << " (not invalid_argument): " << st.message();
  if (st.message().find(want) == std::string::npos)
    return ::testing::AssertionFailure() << "'" << st.message() << "' lacks '" << want << "'";
  return ::testing::AssertionSuccess();
}

}  // namespace prima::cli
