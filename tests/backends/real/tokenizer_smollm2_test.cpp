// The tokenizer on the real SmolLM2-135M-Instruct vocabulary against reference fixtures made
// by tests/data/tokenizer/make_reference.py: token ids from llama.cpp (llama-cpp-python) and
// chat prompts rendered by Python jinja2 from the model's template (and the canonical
// templates of other families). Skips when the model file is absent.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "backends/real/gguf.h"
#include "backends/real/tokenizer.h"

namespace prima::real {
namespace {

const std::string kModel = std::string(PRIMA_MODEL_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
const std::string kData = std::string(PRIMA_SOURCE_DIR) + "/tests/data/tokenizer/";

nlohmann::json load_json(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << path;
  return nlohmann::json::parse(in);
}

class TokenizerSmollm2 : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!std::filesystem::exists(kModel)) return;
    auto f = GgufFile::open(kModel, {.manifest = "none"});
    ASSERT_TRUE(f.ok()) << f.status().to_string();
    auto v = vocab_from_gguf(**f);
    ASSERT_TRUE(v.ok()) << v.status().to_string();
    auto t = Tokenizer::create(std::move(v.value()));
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    tok_ = std::move(t.value()).release();
  }
  static void TearDownTestSuite() {
    delete tok_;
    tok_ = nullptr;
  }
  void SetUp() override {
    if (!std::filesystem::exists(kModel)) {
      GTEST_SKIP() << kModel << " is missing: run scripts/fetch-model.sh to download it";
    }
    ASSERT_NE(tok_, nullptr);
  }
  static Tokenizer* tok_;
};
Tokenizer* TokenizerSmollm2::tok_ = nullptr;

TEST_F(TokenizerSmollm2, VocabularyFacts) {
  EXPECT_EQ(tok_->vocab_size(), 49152);
  EXPECT_EQ(tok_->bos(), 1);
  EXPECT_EQ(tok_->eos(), 2);
  EXPECT_EQ(tok_->piece(0), "<|endoftext|>");
  EXPECT_EQ(tok_->piece(1), "<|im_start|>");
  EXPECT_EQ(tok_->eog_ids(), (std::vector<int>{0, 2}));  // <|endoftext|>, <|im_end|> (eos)
  EXPECT_EQ(tok_->chat_family(), "chatml");
  // add_bos_token is false in this file: add_special adds nothing.
  EXPECT_EQ(tok_->encode("hi", true, false), tok_->encode("hi", false, false));
}

TEST_F(TokenizerSmollm2, MatchesLlamaCpp) {
  if (!std::filesystem::exists(kData + "smollm2_reference.json")) {
    GTEST_SKIP() << "no llama.cpp reference: run tests/data/tokenizer/make_reference.py "
                    "with llama-cpp-python installed";
  }
  const nlohmann::json ref = load_json(kData + "smollm2_reference.json");
  const auto& cases = ref.at("cases");
  ASSERT_GE(cases.size(), 80u);
  int mismatches = 0;
  for (const auto& c : cases) {
    const std::string text = c.at("text");
    const bool special = c.at("parse_special");
    const std::vector<int> want = c.at("ids");
    const std::vector<int> got = tok_->encode(text, false, special);
    EXPECT_EQ(got, want) << "text: \"" << text.substr(0, 200) << "\" parse_special=" << special;
    mismatches += got != want;
    EXPECT_EQ(tok_->decode(got), text) << "round trip of \"" << text.substr(0, 200) << "\"";
  }
  EXPECT_EQ(mismatches, 0);
}

TEST_F(TokenizerSmollm2, ChatTemplateMatchesJinja) {
  const nlohmann::json ref = load_json(kData + "smollm2_chat_reference.json");
  int checked = 0;
  for (const auto& c : ref.at("cases")) {
    const std::string name = c.at("template");
    std::vector<ChatMessage> msgs;
    for (const auto& m : c.at("messages")) msgs.push_back({m.at("role"), m.at("content")});
    const bool add_gen = c.at("add_generation_prompt");
    const Tokenizer* t = tok_;
    std::unique_ptr<Tokenizer> other;
    if (name != "model") {
      // Another family's template on a small vocabulary carrying its bos/eos texts.
      const auto& spec = ref.at("templates").at(name);
      VocabData v;
      v.model = "gpt2";
      v.tokens = {"a", spec.at("bos"), spec.at("eos")};
      v.types = {1, 3, 3};
      v.bos = 1;
      v.eos = 2;
      v.chat_template = spec.at("template");
      auto made = Tokenizer::create(std::move(v));
      ASSERT_TRUE(made.ok()) << made.status().to_string();
      other = std::move(made.value());
      EXPECT_EQ(other->chat_family(), name);
      t = other.get();
    }
    auto r = t->apply_chat_template(msgs, add_gen);
    if (c.at("rendered").is_null()) {
      EXPECT_FALSE(r.ok()) << name << ": jinja2 raised, we rendered " << (r.ok() ? *r : "");
    } else {
      ASSERT_TRUE(r.ok()) << name << ": " << r.status().to_string();
      EXPECT_EQ(*r, c.at("rendered").get<std::string>()) << name << " case " << checked;
    }
    ++checked;
  }
  EXPECT_GE(checked, 40);
}

// A long prompt (~100 KB of mixed text) encodes and round-trips; prints the measured speed.
TEST_F(TokenizerSmollm2, LongPromptSpeed) {
  const nlohmann::json ref = load_json(kData + "smollm2_chat_reference.json");
  std::string unit;
  for (const auto& c : ref.at("cases")) {
    for (const auto& m : c.at("messages")) unit += m.at("content").get<std::string>() + "\n";
  }
  unit += "for (int i = 0; i < 1000; ++i) { total += values[i] * 31337; }\n";
  std::string text;
  while (text.size() < 100000) text += unit;
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<int> ids = tok_->encode(text, false, true);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(tok_->decode(ids), text);
  std::printf("encode: %zu bytes -> %zu tokens in %.1f ms (%.1f MB/s)\n", text.size(), ids.size(),
              s * 1e3, text.size() / s / 1e6);
}

}  // namespace
}  // namespace prima::real
