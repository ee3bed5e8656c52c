// Tokenizer on small hand-made vocabularies: pre-tokenizer splits (expected pieces derived
// from the regular expressions by hand), GPT-2 byte-level BPE merges by rank, SentencePiece
// merges by score with byte fallback, special tokens, decoding, eog ids, and errors.
#include "backends/real/tokenizer.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/real/tokenizer_internal.h"

namespace prima::real {
namespace {

std::vector<std::string> split(tok::PreType t, std::string_view s) {
  std::vector<std::string_view> v;
  tok::pretokenize(t, s, &v);
  return {v.begin(), v.end()};
}

using Pieces = std::vector<std::string>;

TEST(TokenizerPretokenize, Gpt2Expression) {
  EXPECT_EQ(split(tok::PreType::kGpt2, "Hello world's  end\n\n"),
            (Pieces{"Hello", " world", "'s", " ", " end", "\n\n"}));
  EXPECT_EQ(split(tok::PreType::kGpt2, "\n\nhello   there!!! x"),
            (Pieces{"\n", "\n", "hello", "  ", " there", "!!!", " x"}));
  EXPECT_EQ(split(tok::PreType::kGpt2, "it'S 42x"), (Pieces{"it", "'", "S", " 42", "x"}));
  EXPECT_EQ(split(tok::PreType::kGpt2, "Привет мир"), (Pieces{"Привет", " мир"}));
  EXPECT_TRUE(split(tok::PreType::kGpt2, "").empty());
}

TEST(TokenizerPretokenize, SmollmSplitsEveryDigit) {
  EXPECT_EQ(split(tok::PreType::kSmollm, "abc 123"), (Pieces{"abc", " ", "1", "2", "3"}));
  EXPECT_EQ(split(tok::PreType::kSmollm, "x12y"), (Pieces{"x", "1", "2", "y"}));
  EXPECT_EQ(split(tok::PreType::kSmollm, "a 1.5 b"), (Pieces{"a", " ", "1", ".", "5", " b"}));
}

TEST(TokenizerPretokenize, Llama3Expression) {
  EXPECT_EQ(split(tok::PreType::kLlama3, "HELLO'S 12345 ok\n\n  x"),
            (Pieces{"HELLO", "'S", " ", "123", "45", " ok", "\n\n", " ", " x"}));
}

TEST(TokenizerPretokenize, InvalidUtf8IsKeptAsBytes) {
  const std::string s = "a\xff\xfe b";
  Pieces p = split(tok::PreType::kGpt2, s);
  std::string joined;
  for (const auto& x : p) joined += x;
  EXPECT_EQ(joined, s);
  EXPECT_EQ(p, (Pieces{"a", "\xff\xfe", " b"}));
}

// Every string of the fixtures, split as Python's regex module splits with the expressions.
TEST(TokenizerPretokenize, MatchesPythonRegex) {
  const std::string path =
      std::string(PRIMA_SOURCE_DIR) + "/tests/data/tokenizer/pretokenize_reference.json";
  std::ifstream in(path);
  ASSERT_TRUE(in.good()) << path;
  const nlohmann::json ref = nlohmann::json::parse(in);
  int n = 0;
  for (const auto& c : ref.at("cases")) {
    auto type = tok::pre_type_from_name(c.at("pre").get<std::string>());
    ASSERT_TRUE(type.ok()) << type.status().to_string();
    const std::string text = c.at("text");
    EXPECT_EQ(split(*type, text), c.at("pieces").get<Pieces>())
        << c.at("pre") << ": \"" << text.substr(0, 120) << "\"";
    ++n;
  }
  EXPECT_GE(n, 150);
}

// A GPT-2 style vocabulary: the 256 byte characters, then merged tokens, then specials.
VocabData gpt2_vocab() {
  VocabData v;
  v.model = "gpt2";
  v.pre = "gpt2";
  for (int b = 0; b < 256; ++b) v.tokens.push_back(tok::utf8_encode(tok::byte_to_cp(b)));
  v.merges = {"h e", "l l", "he ll", "hell o", "Ġ w", "o r", "Ġw or", "a a"};
  for (const char* t : {"he", "ll", "hell", "hello", "Ġw", "or", "Ġwor", "aa"}) {
    v.tokens.push_back(t);
  }
  v.tokens.push_back("<|im_end|>");     // 264, control
  v.tokens.push_back("<x>");            // 265, user defined
  v.tokens.push_back("<|endoftext|>");  // 266, control
  v.types.assign(v.tokens.size(), 1);
  v.types[264] = 3;
  v.types[265] = 4;
  v.types[266] = 3;
  v.bos = 266;
  v.eos = 264;
  return v;
}

std::unique_ptr<Tokenizer> make(VocabData v) {
  auto t = Tokenizer::create(std::move(v));
  EXPECT_TRUE(t.ok()) << t.status().to_string();
  return t.ok() ? std::move(t.value()) : nullptr;
}

int id_of(const VocabData& v, const std::string& s) {
  for (std::size_t i = 0; i < v.tokens.size(); ++i) {
    if (v.tokens[i] == s) return static_cast<int>(i);
  }
  return -1;
}

TEST(TokenizerGpt2, MergesByRank) {
  const VocabData v = gpt2_vocab();
  auto t = make(v);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->encode("hello world", false, false),
            (std::vector<int>{id_of(v, "hello"), id_of(v, "Ġwor"), 'l', 'd'}));
  // Equal ranks: the leftmost pair merges first.
  EXPECT_EQ(t->encode("aaa", false, false), (std::vector<int>{id_of(v, "aa"), 'a'}));
  // A pair without a rank never merges ("eh" stays two tokens).
  EXPECT_EQ(t->encode("eh", false, false), (std::vector<int>{'e', 'h'}));
  EXPECT_EQ(t->decode(t->encode("hello world", false, false)), "hello world");
}

TEST(TokenizerGpt2, BytesRoundTrip) {
  auto t = make(gpt2_vocab());
  ASSERT_TRUE(t);
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  EXPECT_EQ(t->decode(t->encode(all, false, false)), all);
  const std::string s = "Grüße, 世界 🙂\t\r\n  ";
  EXPECT_EQ(t->decode(t->encode(s, false, false)), s);
  // Space is byte 0x20, stored as "Ġ" (U+0120).
  EXPECT_EQ(t->encode(" ", false, false), (std::vector<int>{' '}));
  EXPECT_EQ(t->piece(' '), " ");
}

TEST(TokenizerGpt2, SpecialTokens) {
  const VocabData v = gpt2_vocab();
  auto t = make(v);
  ASSERT_TRUE(t);
  const std::vector<int> on = t->encode("he<|im_end|>he", false, true);
  EXPECT_EQ(on, (std::vector<int>{id_of(v, "he"), 264, id_of(v, "he")}));
  // Without parse_special, control tokens are plain text; user-defined ones still match.
  const std::vector<int> off = t->encode("<|im_end|>", false, false);
  EXPECT_GT(off.size(), 1u);
  EXPECT_EQ(t->decode(off), "<|im_end|>");
  EXPECT_EQ(t->encode("a<x>b", false, false), (std::vector<int>{'a', 265, 'b'}));
  // Decoding: control text unless skipped.
  EXPECT_EQ(t->decode(on), "he<|im_end|>he");
  EXPECT_EQ(t->decode(on, true), "hehe");
  EXPECT_TRUE(t->is_special(264));
  EXPECT_FALSE(t->is_special('h'));
}

TEST(TokenizerGpt2, AddSpecialAndEog) {
  VocabData v = gpt2_vocab();
  v.add_bos = true;
  v.add_eos = true;
  auto t = make(v);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->encode("he", true, false), (std::vector<int>{266, id_of(v, "he"), 264}));
  EXPECT_EQ(t->encode("he", false, false), (std::vector<int>{id_of(v, "he")}));
  EXPECT_EQ(t->eog_ids(), (std::vector<int>{264, 266}));  // eos; <|endoftext|> by name
  EXPECT_EQ(t->bos(), 266);
  EXPECT_EQ(t->eos(), 264);
  EXPECT_EQ(t->vocab_size(), 267);
}

TEST(TokenizerGpt2, LongInputIsLinearish) {
  auto t = make(gpt2_vocab());
  ASSERT_TRUE(t);
  const std::string s(200000, 'a');  // one piece of 200k bytes: heap-driven merging
  const std::vector<int> ids = t->encode(s, false, false);
  EXPECT_EQ(ids.size(), 100000u);
  EXPECT_EQ(t->decode(ids), s);
}

TEST(TokenizerGpt2, Errors) {
  VocabData v = gpt2_vocab();
  v.pre = "no-such-pre";
  auto a = Tokenizer::create(v);
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("no-such-pre"), std::string::npos);
  v = gpt2_vocab();
  v.merges.push_back("nospace");
  auto b = Tokenizer::create(v);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("merges[8]"), std::string::npos);
  v = gpt2_vocab();
  v.eos = 10000;
  EXPECT_FALSE(Tokenizer::create(v).ok());
  v = gpt2_vocab();
  v.model = "wordpiece";
  EXPECT_FALSE(Tokenizer::create(v).ok());
}

// A SentencePiece vocabulary; scores chosen so that "▁hello▁world" merges into
// ▁hello ▁w or ld (worked through by hand: ll, he, ▁he, llo, ▁hello, ▁w, or, ld).
VocabData spm_vocab() {
  VocabData v;
  v.model = "llama";
  v.add_bos = true;
  v.add_space_prefix = true;
  auto add = [&](const std::string& s, float score, int type) {
    v.tokens.push_back(s);
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0, 2);
  add("<s>", 0, 3);
  add("</s>", 0, 3);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    add(name, 0, 6);
  }
  for (const char* c : {"▁", "h", "e", "l", "o", "w", "r", "d"}) add(c, -10, 1);
  add("ll", -1, 1);
  add("he", -2, 1);
  add("▁he", -3, 1);
  add("llo", -4, 1);
  add("▁hello", -5, 1);
  add("▁w", -6, 1);
  add("or", -7, 1);
  add("ld", -8, 1);
  v.unk = 0;
  v.bos = 1;
  v.eos = 2;
  return v;
}

TEST(TokenizerSpm, MergesByScore) {
  const VocabData v = spm_vocab();
  auto t = make(v);
  ASSERT_TRUE(t);
  const std::vector<int> ids = t->encode("hello world", true, false);
  EXPECT_EQ(ids, (std::vector<int>{1, id_of(v, "▁hello"), id_of(v, "▁w"), id_of(v, "or"),
                                   id_of(v, "ld")}));
  EXPECT_EQ(t->decode(ids, true), "hello world");  // the prefix space is not part of the text
  EXPECT_EQ(t->decode(ids), "<s>hello world");
}

TEST(TokenizerSpm, TiesAndByteFallback) {
  const VocabData v = spm_vocab();
  auto t = make(v);
  ASSERT_TRUE(t);
  // "▁lll": ll + l (leftmost of two equal-score pairs), the prefix ▁ stays alone.
  EXPECT_EQ(t->encode("lll", false, false),
            (std::vector<int>{id_of(v, "▁"), id_of(v, "ll"), id_of(v, "l")}));
  // é is not a token: its UTF-8 bytes C3 A9 become <0xC3> <0xA9>.
  const std::vector<int> ids = t->encode("hé", false, false);
  EXPECT_EQ(ids, (std::vector<int>{id_of(v, "▁"), id_of(v, "h"), id_of(v, "<0xC3>"),
                                   id_of(v, "<0xA9>")}));
  EXPECT_EQ(t->decode(ids), "hé");
  EXPECT_EQ(t->piece(id_of(v, "<0x41>")), "A");
  EXPECT_EQ(t->piece(id_of(v, "▁hello")), " hello");
}

TEST(TokenizerSpm, SpecialsAndSpacePrefix) {
  const VocabData v = spm_vocab();
  auto t = make(v);
  ASSERT_TRUE(t);
  // After a special token the next text gets the space prefix again.
  EXPECT_EQ(t->encode("he</s>he", false, true),
            (std::vector<int>{id_of(v, "▁he"), 2, id_of(v, "▁he")}));
  VocabData np = spm_vocab();
  np.add_space_prefix = false;
  auto u = make(np);
  ASSERT_TRUE(u);
  EXPECT_EQ(u->encode("he", true, false), (std::vector<int>{1, id_of(v, "he")}));
  EXPECT_EQ(u->decode(u->encode(" hello", false, false)), " hello");
}

TEST(TokenizerSpm, ScoresMustMatchTokens) {
  VocabData v = spm_vocab();
  v.scores.pop_back();
  auto t = Tokenizer::create(v);
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("tokenizer.ggml.scores"), std::string::npos);
}

TEST(TokenizerChat, UnknownFamilyAndNoTemplate) {
  VocabData v = gpt2_vocab();
  auto none = make(v);
  ASSERT_TRUE(none);
  EXPECT_EQ(none->chat_family(), "");
  auto r = none->apply_chat_template({{"user", "hi"}}, true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no chat template"), std::string::npos);
  v.chat_template = "{% for m in messages %}### {{ m['role'] }}: {{ m['content'] }}{% endfor %}";
  auto unknown = make(v);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->chat_family(), "");
  auto u = unknown->apply_chat_template({{"user", "hi"}}, true);
  ASSERT_FALSE(u.ok());
  EXPECT_NE(u.status().message().find("unknown template family"), std::string::npos);
}

TEST(TokenizerChat, ChatmlWithoutDefaultSystem) {
  VocabData v = gpt2_vocab();
  v.chat_template =
      "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + "
      "message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}"
      "{{ '<|im_start|>assistant\\n' }}{% endif %}";
  auto t = make(v);
  ASSERT_TRUE(t);
  EXPECT_EQ(t->chat_family(), "chatml");
  auto r = t->apply_chat_template({{"user", "hi"}}, true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r, "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n");
}

TEST(TokenizerChat, EscapedDefaultSystem) {
  VocabData v = gpt2_vocab();
  v.chat_template =
      "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
      "{{ '<|im_start|>system\\nYou are Qwen.\\nBe brief.<|im_end|>\\n' }}{% endif %}"
      "{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n'}}"
      "{% endfor %}";
  auto t = make(v);
  ASSERT_TRUE(t);
  auto r = t->apply_chat_template({{"user", "hi"}}, false);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(*r,
            "<|im_start|>system\nYou are Qwen.\nBe brief.<|im_end|>\n"
            "<|im_start|>user\nhi<|im_end|>\n");
  auto s = t->apply_chat_template({{"system", "S"}, {"user", "hi"}}, false);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n");
}

}  // namespace
}  // namespace prima::real
