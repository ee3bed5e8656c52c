// Greedy decoding of SmolLM2-135M-Instruct Q4_1 through `prima generate` gives exactly
// llama.cpp's tokens (tests/data/real/smollm2_reference.json, written by
// make_reference_tokens.py with llama-cpp-python on the same file): the prompt's token ids
// from our tokenizer, then 32 generated ids (fewer when an end-of-generation id comes first),
// for plain prompts and chat-template prompts.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/real/gguf.h"
#include "backends/real/tokenizer.h"
#include "tests/support/run_prima.h"

namespace prima::real {
namespace {

using prima::testing::read_json;
using prima::testing::run_prima;
using prima::testing::source_path;
using prima::testing::temp_dir;

std::vector<int> parse_ids(const std::string& s) {
  std::vector<int> ids;
  std::istringstream in(s);
  int v;
  while (in >> v) ids.push_back(v);
  return ids;
}

class ReferenceTokens : public ::testing::Test {
 protected:
  void SetUp() override {
    model_ = source_path("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    if (!std::filesystem::exists(model_))
      GTEST_SKIP() << model_ << " not present (scripts/setup.sh fetches it)";
    ref_ = read_json(source_path("tests/data/real/smollm2_reference.json"));
  }
  std::string model_;
  nlohmann::json ref_;
};

TEST_F(ReferenceTokens, PromptIdsEqualLlamaCpp) {
  GgufOpenOptions o;
  o.manifest = "none";
  auto f = GgufFile::open(model_, o);
  ASSERT_TRUE(f.ok()) << f.status().message();
  auto v = vocab_from_gguf(**f);
  ASSERT_TRUE(v.ok()) << v.status().message();
  auto tok = Tokenizer::create(std::move(*v));
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  for (const auto& c : ref_["cases"]) {
    const auto want = c["prompt_ids"].get<std::vector<int>>();
    EXPECT_EQ((*tok)->encode(c["text"].get<std::string>(), true, true), want) << c["name"];
    if (c.contains("messages")) {
      std::vector<ChatMessage> msgs;
      for (const auto& m : c["messages"]) msgs.push_back({m["role"], m["content"]});
      auto text = (*tok)->apply_chat_template(msgs, true);
      ASSERT_TRUE(text.ok()) << text.status().message();
      EXPECT_EQ(*text, c["text"].get<std::string>()) << c["name"];
    }
  }
}

TEST_F(ReferenceTokens, GreedyTokensEqualLlamaCpp) {
  const std::string dir = temp_dir("reference_tokens");
  int compared = 0;
  for (const auto& c : ref_["cases"]) {
    const std::string name = c["name"];
    const std::string prompt_file = dir + "/" + name + ".txt";
    std::ofstream(prompt_file, std::ios::binary) << c["text"].get<std::string>();
    const auto want = c["output_ids"].get<std::vector<int>>();
    auto r =
        run_prima("generate --model " + model_ + " --prompt-file " + prompt_file +
                  " --max-tokens " + std::to_string(ref_["greedy_tokens"].get<int>()) + " --ids");
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    EXPECT_EQ(parse_ids(r.out), want) << name << " (" << c["output_text"] << ")";
    compared += static_cast<int>(want.size());
  }
  EXPECT_GE(ref_["cases"].size(), 5u);
  EXPECT_GE(compared, 5 * 16);
}

}  // namespace
}  // namespace prima::real
