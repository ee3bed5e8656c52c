// vocab_from_gguf on small GGUF files written by GgufWriter: every key read, defaults for the
// optional ones, and errors that name the missing or ill-typed key.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "backends/real/gguf.h"
#include "backends/real/tokenizer.h"

namespace prima::real {
namespace {

GgufArray strings(std::vector<std::string> s) {
  GgufArray a;
  a.elem = GgufType::kString;
  a.strings = std::move(s);
  return a;
}
GgufArray numbers(GgufType t, std::vector<double> v) {
  GgufArray a;
  a.elem = t;
  a.numbers = std::move(v);
  return a;
}

// A complete gpt2 vocabulary: a, b, ab, <|im_end|>.
GgufWriter full_writer() {
  GgufWriter w;
  w.set("tokenizer.ggml.model", std::string("gpt2"));
  w.set("tokenizer.ggml.pre", std::string("smollm"));
  w.set("tokenizer.ggml.tokens", strings({"a", "b", "ab", "<|im_end|>"}));
  w.set("tokenizer.ggml.scores", numbers(GgufType::kF32, {0, 0, -1, 0}));
  w.set("tokenizer.ggml.token_type", numbers(GgufType::kI32, {1, 1, 1, 3}));
  w.set("tokenizer.ggml.merges", strings({"a b"}));
  w.set_u32("tokenizer.ggml.bos_token_id", 3);
  w.set_u32("tokenizer.ggml.eos_token_id", 3);
  w.set_u32("tokenizer.ggml.eot_token_id", 3);
  w.set_u32("tokenizer.ggml.unknown_token_id", 0);
  w.set_u32("tokenizer.ggml.padding_token_id", 1);
  w.set("tokenizer.ggml.add_bos_token", true);
  w.set("tokenizer.ggml.add_eos_token", false);
  w.set("tokenizer.ggml.add_space_prefix", false);
  w.set("tokenizer.chat_template", std::string("{{ '<|im_start|>' }}"));
  return w;
}

class TokenizerGguf : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("prima_tok_" + std::to_string(::getpid()) + "_" +
              ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".gguf"))
                .string();
  }
  void TearDown() override { std::filesystem::remove(path_); }
  Result<VocabData> read(const GgufWriter& w) {
    Status s = w.write(path_);
    EXPECT_TRUE(s.ok()) << s.to_string();
    auto f = GgufFile::open(path_, {.manifest = "none"});
    EXPECT_TRUE(f.ok()) << f.status().to_string();
    if (!f.ok()) return f.status();
    return vocab_from_gguf(**f);
  }
  std::string path_;
};

TEST_F(TokenizerGguf, ReadsEveryKey) {
  auto v = read(full_writer());
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->model, "gpt2");
  EXPECT_EQ(v->pre, "smollm");
  EXPECT_EQ(v->tokens, (std::vector<std::string>{"a", "b", "ab", "<|im_end|>"}));
  EXPECT_EQ(v->scores, (std::vector<float>{0, 0, -1, 0}));
  EXPECT_EQ(v->types, (std::vector<int>{1, 1, 1, 3}));
  EXPECT_EQ(v->merges, (std::vector<std::string>{"a b"}));
  EXPECT_EQ(v->bos, 3);
  EXPECT_EQ(v->eos, 3);
  EXPECT_EQ(v->eot, 3);
  EXPECT_EQ(v->unk, 0);
  EXPECT_EQ(v->pad, 1);
  EXPECT_TRUE(v->add_bos);
  EXPECT_FALSE(v->add_eos);
  EXPECT_FALSE(v->add_space_prefix);
  EXPECT_EQ(v->chat_template, "{{ '<|im_start|>' }}");
  auto t = Tokenizer::create(std::move(v.value()));
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ((*t)->encode("ab<|im_end|>", true, true), (std::vector<int>{3, 2, 3}));
}

TEST_F(TokenizerGguf, OptionalKeysDefault) {
  GgufWriter w;
  w.set("tokenizer.ggml.model", std::string("llama"));
  w.set("tokenizer.ggml.tokens", strings({"<unk>", "▁a"}));
  auto v = read(w);
  ASSERT_TRUE(v.ok()) << v.status().to_string();
  EXPECT_EQ(v->pre, "default");
  EXPECT_EQ(v->types, (std::vector<int>{1, 1}));
  EXPECT_TRUE(v->scores.empty());
  EXPECT_EQ(v->bos, -1);
  EXPECT_TRUE(v->add_bos);  // llama's defaults
  EXPECT_TRUE(v->add_space_prefix);
  EXPECT_TRUE(v->chat_template.empty());
}

void expect_error_names(const Result<VocabData>& v, const std::string& key) {
  ASSERT_FALSE(v.ok());
  EXPECT_NE(v.status().message().find(key), std::string::npos) << v.status().to_string();
}

TEST_F(TokenizerGguf, MissingKeys) {
  {
    GgufWriter w;
    w.set("tokenizer.ggml.tokens", strings({"a"}));
    expect_error_names(read(w), "tokenizer.ggml.model");
  }
  {
    GgufWriter w;
    w.set("tokenizer.ggml.model", std::string("gpt2"));
    w.set("tokenizer.ggml.merges", strings({}));
    expect_error_names(read(w), "tokenizer.ggml.tokens");
  }
  {
    GgufWriter w;  // gpt2 needs merges
    w.set("tokenizer.ggml.model", std::string("gpt2"));
    w.set("tokenizer.ggml.tokens", strings({"a"}));
    expect_error_names(read(w), "tokenizer.ggml.merges");
  }
}

TEST_F(TokenizerGguf, IllTypedKeys) {
  {
    GgufWriter w = full_writer();
    w.set("tokenizer.ggml.tokens", std::string("a b"));
    expect_error_names(read(w), "tokenizer.ggml.tokens");
  }
  {
    GgufWriter w = full_writer();
    w.set("tokenizer.ggml.token_type", numbers(GgufType::kI32, {1, 1}));  // wrong length
    expect_error_names(read(w), "tokenizer.ggml.token_type");
  }
  {
    GgufWriter w = full_writer();
    w.set("tokenizer.ggml.scores", strings({"x", "y", "z", "w"}));
    expect_error_names(read(w), "tokenizer.ggml.scores");
  }
  {
    GgufWriter w = full_writer();
    w.set_u32("tokenizer.ggml.eos_token_id", 4);  // outside the vocabulary
    expect_error_names(read(w), "tokenizer.ggml.eos_token_id");
  }
  {
    GgufWriter w = full_writer();
    w.set("tokenizer.ggml.add_bos_token", std::string("yes"));
    expect_error_names(read(w), "tokenizer.ggml.add_bos_token");
  }
  {
    GgufWriter w = full_writer();
    w.set("tokenizer.ggml.model", std::string("bert"));
    expect_error_names(read(w), "tokenizer.ggml.model");
  }
  {
    GgufWriter w = full_writer();
    w.set("tokenizer.chat_template", std::int64_t{7});
    expect_error_names(read(w), "tokenizer.chat_template");
  }
}

}  // namespace
}  // namespace prima::real
