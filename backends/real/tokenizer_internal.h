// Internal pieces of the tokenizer (not part of the contract): UTF-8 and Unicode categories,
// pre-tokenizers, the GPT-2 byte-level BPE and SentencePiece-style BPE encoders, chat
// template recognition and rendering. All are immutable after construction; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "backends/real/tokenizer.h"
#include "engine/core/status.h"

namespace prima::real::tok {

// ---- UTF-8 and categories (tokenizer_unicode.cpp) ----

// One character of a text: a code point and where its bytes are. A byte that does not start
// a valid UTF-8 sequence is its own character with cp = kInvalidCp (category "other").
inline constexpr char32_t kInvalidCp = 0xFFFFFFFFu;
struct Cp {
  char32_t cp;
  std::uint32_t off;
  std::uint32_t len;
};
std::vector<Cp> utf8_chars(std::string_view s);
std::string utf8_encode(char32_t cp);

bool is_letter(char32_t cp);      // \p{L}
bool is_number(char32_t cp);      // \p{N}
bool is_whitespace(char32_t cp);  // \s (Unicode White_Space)

// GPT-2's reversible byte <-> printable code point mapping.
char32_t byte_to_cp(std::uint8_t b);
int cp_to_byte(char32_t cp);  // -1 if cp is not in the mapping's image

// ---- pre-tokenizers (pretokenize.cpp) ----

enum class PreType { kGpt2, kSmollm, kLlama3 };
Result<PreType> pre_type_from_name(const std::string& name);
// Appends the pieces of `text` (sub-views of it, in order, covering it exactly).
void pretokenize(PreType type, std::string_view text, std::vector<std::string_view>* out);

// ---- GPT-2 byte-level BPE (bpe_gpt2.cpp) ----

class Gpt2Bpe {
 public:
  // Errors name the merge index that is malformed.
  static Result<Gpt2Bpe> build(const VocabData& v, const std::unordered_map<std::string, int>& ids);
  // Encodes one pre-tokenized piece (raw bytes); appends token ids.
  void encode_piece(std::string_view bytes, bool ignore_merges, std::vector<int>* out) const;

 private:
  const std::unordered_map<std::string, int>* ids_ = nullptr;
  // (left id << 32 | right id) -> (rank, merged id)
  std::unordered_map<std::uint64_t, std::pair<int, int>> merges_;
  std::array<int, 256> byte_ids_{};  // token of each byte's mapped character, -1 if none
  int unk_ = -1;
};

// ---- SentencePiece-style BPE (bpe_spm.cpp) ----

class SpmBpe {
 public:
  static Result<SpmBpe> build(const VocabData& v, const std::unordered_map<std::string, int>& ids);
  // Encodes text whose spaces are already "▁"; appends token ids.
  void encode(std::string_view text, std::vector<int>* out) const;

 private:
  using RevMerge = std::unordered_map<std::string, std::pair<std::string, std::string>>;
  void resegment(const std::string& sym, const RevMerge& rev, std::vector<int>* out) const;
  const VocabData* v_ = nullptr;
  const std::unordered_map<std::string, int>* ids_ = nullptr;
  std::array<int, 256> byte_tokens_{};  // <0xXX> token ids, -1 if absent
};

// ---- chat templates (chat_template.cpp) ----

struct ChatTemplate {
  std::string family;          // "chatml", "llama3", "llama2", "mistral", "zephyr", "gemma", ""
  std::string default_system;  // inserted when the first message is not a system one
  bool has_default_system = false;
  bool uses_bos = false;  // the template writes bos_token
  std::string bos_text, eos_text;
};
ChatTemplate recognise_chat_template(const std::string& tmpl, const std::string& bos_text,
                                     const std::string& eos_text);
Result<std::string> render_chat(const ChatTemplate& t, const std::vector<ChatMessage>& messages,
                                bool add_generation_prompt);

}  // namespace prima::real::tok
