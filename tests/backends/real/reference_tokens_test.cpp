// SmolLM2-135M-Instruct Q4_1 against llama.cpp on the same file
// (tests/data/real/smollm2_reference.json, written by make_reference_tokens.py with
// llama-cpp-python): the prompt's token ids from our tokenizer and chat template equal
// llama.cpp's exactly; greedy decoding through `prima generate` gives llama.cpp's 32 tokens
// for every prompt; and with the x86 kernels the logits of every generated position are
// llama.cpp's bit for bit (its 5 best ids and values; the prompt as one batch, then one token
// per step, as llama.cpp ran it). Both hold with the weights packed (`--repack`) too, where the
// CPU has the packed kernels. docs/kernels.md describes the numerics that make this so.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "backends/real/gguf.h"
#include "backends/real/tokenizer.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/packed.h"
#include "tests/backends/real/forward_harness.h"
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

void expect_reference_tokens(const std::string& model, const nlohmann::json& ref,
                             const std::string& flags) {
  const std::string dir = temp_dir("reference_tokens");
  int full = 0;
  for (const auto& c : ref["cases"]) {
    const std::string name = c["name"];
    const std::string prompt_file = dir + "/" + name + ".txt";
    std::ofstream(prompt_file, std::ios::binary) << c["text"].get<std::string>();
    const auto want = c["output_ids"].get<std::vector<int>>();
    auto r =
        run_prima("generate --model " + model + " --prompt-file " + prompt_file + " --max-tokens " +
                  std::to_string(ref["greedy_tokens"].get<int>()) + " --ids" + flags);
    ASSERT_EQ(r.exit_code, 0) << name << ": " << r.err;
    const std::vector<int> got = parse_ids(r.out);
    EXPECT_EQ(got, want) << name << flags;
    if (got == want) ++full;
  }
  EXPECT_GE(ref["cases"].size(), 5u);
  std::printf("reference tokens%s: %d of %zu prompts equal on all tokens\n", flags.c_str(), full,
              ref["cases"].size());
}

TEST_F(ReferenceTokens, GreedyTokensEqualLlamaCpp) {
  // The reference is llama.cpp's x86 build; the portable kernels (PRIMA_KERNELS=portable, or a
  // CPU without AVX2) sum the products in another order, as llama.cpp's own kernels do on
  // other CPUs, and move the tokens of prompts whose best logits are close.
  if (std::string(kernels::kernel_isa()) != "avx2")
    GTEST_SKIP() << "the reference tokens are llama.cpp's x86 build's; this CPU runs "
                 << kernels::kernel_isa();
  // The GGUF layout (packing is the default where the CPU has the packed kernels).
  expect_reference_tokens(model_, ref_, " --no-repack");
}

TEST_F(ReferenceTokens, GreedyTokensEqualLlamaCppWithPackedWeights) {
  if (!kernels::repack_supported(kernels::DType::kQ4_1))
    GTEST_SKIP() << "this CPU has no AVX-512 VNNI packed kernels (--repack keeps the GGUF layout)";
  expect_reference_tokens(model_, ref_, " --repack");
}

// Every generated position's 5 best logits equal llama.cpp's, bit for bit.
void expect_reference_logits(const std::string& path, const nlohmann::json& ref, bool repack) {
  auto model = testing::LoadedModel::open(path, 64, 16, {}, 2, nullptr, repack);
  ASSERT_TRUE(model);
  ASSERT_EQ(model->weights->repacked(), repack);
  const int V = model->config.vocab;
  int positions = 0;
  for (const auto& c : ref["cases"]) {
    const std::string name = c["name"];
    testing::TestSeq s;
    s.id = 1;
    s.prompt = c["prompt_ids"].get<std::vector<int>>();
    for (int b = 0; b < 64; ++b) s.blocks.push_back(b);
    const auto& top = c["top_logits"];
    for (std::size_t i = 0; i < top.size(); ++i) {
      // One more step: the prompt in one batch first, then one token at a time.
      testing::run_greedy(*model->fwd, V, {&s}, static_cast<int>(i) + 1);
      ASSERT_EQ(static_cast<int>(s.last_logits.size()), V);
      for (const auto& e : top[i]) {
        const int id = e[0].get<int>();
        const float want = static_cast<float>(e[1].get<double>());
        ASSERT_EQ(s.last_logits[std::size_t(id)], want)
            << name << ", position " << i << ", token " << id << (repack ? " (packed)" : "");
      }
      ++positions;
    }
  }
  EXPECT_GT(positions, 5 * 30);
}

TEST_F(ReferenceTokens, LogitsEqualLlamaCppBitForBit) {
  if (std::string(kernels::kernel_isa()) != "avx2")
    GTEST_SKIP() << "bit-exact agreement holds for the x86 kernels; this CPU runs "
                 << kernels::kernel_isa();
  // The GGUF layout's kernels: llama.cpp's float operations.
  expect_reference_logits(model_, ref_, false);
}

TEST_F(ReferenceTokens, LogitsEqualLlamaCppBitForBitWithPackedWeights) {
  if (!kernels::repack_supported(kernels::DType::kQ4_1))
    GTEST_SKIP() << "this CPU has no AVX-512 VNNI packed kernels";
  expect_reference_logits(model_, ref_, true);
}

}  // namespace
}  // namespace prima::real
