// --synthetic's served model name: the written file's stem, the same whether the weights are
// written or made on the device (a client's "model" field does not change with --device).
#include "cli/synthetic_option.h"

#include <gtest/gtest.h>

namespace prima::cli {
namespace {

TEST(SyntheticOption, ServedNameIsTheWrittenFilesStem) {
  EXPECT_EQ(synthetic_model_name("tiny:q4_1"), "tiny-q4_1-s1");
  EXPECT_EQ(synthetic_model_name("llama-3-8b"), "llama-3-8b-bf16-s1");
  EXPECT_EQ(synthetic_model_name("no-such-model"), "");
  EXPECT_TRUE(check_model_source("", "tiny:bf16").ok());
  EXPECT_FALSE(check_model_source("m.gguf", "tiny:bf16").ok());
  EXPECT_FALSE(check_model_source("", "tiny:q9").ok());
}

}  // namespace
}  // namespace prima::cli
