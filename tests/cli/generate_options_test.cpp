// `prima generate`'s options: the flags fill them with their defaults; validate() refuses each
// bad value naming the flag and the value.
#include "cli/generate_options.h"

#include <gtest/gtest.h>

#include <functional>

#include "cli/flags.h"
#include "tests/cli/options_test_util.h"

namespace prima::cli {
namespace {

GenerateOptions parsed(const Args& args) {
  boost::program_options::variables_map vm;
  std::string error;
  EXPECT_TRUE(parse_flags(args, generate_flags(), &vm, &error)) << error;
  return generate_options(vm);
}

TEST(GenerateOptions, FlagsFillTheOptions) {
  const GenerateOptions d = parsed({"--model", "m.gguf", "--prompt", ""});
  ASSERT_TRUE(d.validate().ok()) << d.validate().message();
  EXPECT_EQ(d.prompt, "");  // given, and empty
  EXPECT_EQ(d.max_tokens, 64);
  EXPECT_DOUBLE_EQ(d.top_p, 1.0);
  EXPECT_EQ(d.batch, 1);
  const GenerateOptions o =
      parsed({"--model", "m.gguf", "--prompt-file", "p.txt", "--chat", "--ids", "--stop", "a",
              "--stop", "b", "--seed", "7", "--tp", "2", "--no-repack"});
  ASSERT_TRUE(o.validate().ok()) << o.validate().message();
  EXPECT_FALSE(o.prompt);
  EXPECT_TRUE(o.chat && o.print_ids && o.no_repack);
  EXPECT_EQ(o.stops, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(o.seed, 7u);
  EXPECT_EQ(o.backend.model_path, "m.gguf");
  EXPECT_EQ(o.backend.tp, 2);
}

TEST(GenerateOptions, EachBadValueNamesTheFlag) {
  struct Case {
    std::function<void(GenerateOptions*)> set;
    std::string want;
  };
  const std::vector<Case> cases = {
      {[](GenerateOptions* o) { o->backend.model_path.clear(); },
       "--model (or --synthetic) and --prompt are required"},
      {[](GenerateOptions* o) { o->prompt.reset(); },
       "--model (or --synthetic) and --prompt are required"},
      {[](GenerateOptions* o) { o->max_tokens = 0; }, "--max-tokens must be >= 1, got 0"},
      {[](GenerateOptions* o) { o->temperature = -1; }, "--temperature must be >= 0, got -1"},
      {[](GenerateOptions* o) { o->top_k = -1; }, "--top-k must be >= 0, got -1"},
      {[](GenerateOptions* o) { o->top_p = 0; }, "--top-p must be > 0 and <= 1, got 0"},
      {[](GenerateOptions* o) { o->top_p = 1.5; }, "--top-p must be > 0 and <= 1, got 1.5"},
      {[](GenerateOptions* o) { o->backend.comm_timeout_s = -1; },
       "--comm-timeout must be > 0, got -1"},
      {[](GenerateOptions* o) { o->batch = 0; }, "--batch must be from 1 to 256, got 0"},
      {[](GenerateOptions* o) { o->batch = 257; }, "--batch must be from 1 to 256, got 257"},
      {[](GenerateOptions* o) {
         o->stops = {"x", ""};
       },
       "--stop needs a non-empty string"},
      {[](GenerateOptions* o) { o->repack = o->no_repack = true; },
       "--repack and --no-repack exclude each other"},
  };
  for (const auto& c : cases) {
    GenerateOptions o;
    o.backend.model_path = "m.gguf";
    o.prompt = "hi";
    ASSERT_TRUE(o.validate().ok());
    c.set(&o);
    EXPECT_TRUE(refused(o.validate(), c.want));
  }
}

}  // namespace
}  // namespace prima::cli
