// Synthetic prompts (length in the sim backend's token count, determinism) and JSONL datasets
// (good rows, bad rows named by file:line).
#include "loadgen/prompts.h"

#include <gtest/gtest.h>

#include <sstream>

namespace prima::loadgen {
namespace {

// prima serve's sim backend: ceil(bytes / 4) tokens (docs/serving.md).
int sim_tokens(std::size_t bytes) {
  return static_cast<int>((bytes + 3) / 4);
}

TEST(Prompts, SyntheticLengthIsExactForTheSimBackend) {
  for (int n : {1, 7, 100, 1024}) {
    std::string p = synthetic_prompt(n, Endpoint::kCompletions, 1, 5);
    EXPECT_EQ(sim_tokens(p.size()), n);
    // chat: + "user" + 16 bytes of markers
    std::string c = synthetic_prompt(n, Endpoint::kChat, 1, 5);
    if (n > 5) {
      EXPECT_EQ(sim_tokens(c.size() + 4 + 16), n);
    }
  }
}

TEST(Prompts, SyntheticIsDeterministicAndDiffersPerRequest) {
  EXPECT_EQ(synthetic_prompt(64, Endpoint::kTgi, 3, 9), synthetic_prompt(64, Endpoint::kTgi, 3, 9));
  EXPECT_NE(synthetic_prompt(64, Endpoint::kTgi, 3, 9),
            synthetic_prompt(64, Endpoint::kTgi, 3, 10));
  EXPECT_NE(synthetic_prompt(64, Endpoint::kTgi, 3, 9), synthetic_prompt(64, Endpoint::kTgi, 4, 9));
}

TEST(Prompts, DatasetRows) {
  std::istringstream in(
      "{\"prompt\": \"hello\", \"output_tokens\": 5}\n"
      "\n"
      "{\"prompt\": \"world\"}\n"
      "{\"prompt\": \"x\", \"max_tokens\": 2}\n");
  auto d = parse_dataset(in, "d.jsonl");
  ASSERT_TRUE(d.ok()) << d.status().message();
  ASSERT_EQ(d->size(), 3u);
  EXPECT_EQ((*d)[0].prompt, "hello");
  EXPECT_EQ((*d)[0].output_tokens, 5);
  EXPECT_EQ((*d)[1].output_tokens, -1);
  EXPECT_EQ((*d)[2].output_tokens, 2);
}

TEST(Prompts, BadDatasetsNameFileAndLine) {
  auto err = [](const std::string& text) {
    std::istringstream in(text);
    auto d = parse_dataset(in, "d.jsonl");
    EXPECT_FALSE(d.ok());
    return d.ok() ? std::string() : d.status().message();
  };
  EXPECT_EQ(err("{\"prompt\": \"a\"}\nnot json\n"), "d.jsonl:2: expected a JSON object per line");
  EXPECT_EQ(err("{\"text\": \"a\"}\n"), "d.jsonl:1: \"prompt\": expected a non-empty string");
  EXPECT_EQ(err("{\"prompt\": \"a\", \"output_tokens\": 0}\n"),
            "d.jsonl:1: \"output_tokens\": expected an integer >= 1, got 0");
  EXPECT_NE(err("\n\n").find("no prompts"), std::string::npos);
  auto missing = read_dataset("/nonexistent/prompts.jsonl");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot open"), std::string::npos);
}

}  // namespace
}  // namespace prima::loadgen
