// Tokenizer built from a GGUF file's metadata (tokenizer.ggml.*): GPT-2 byte-level BPE
// (model "gpt2", with the pre-tokenizer named by tokenizer.ggml.pre: "smollm", "gpt2",
// "llama3", "default") and Llama SentencePiece-style BPE (model "llama": scores, "▁" for
// spaces, byte fallback <0xXX>). Special tokens (token types CONTROL and USER_DEFINED) are
// matched in the text first when parse_special is set. Encoding agrees with llama.cpp
// (llama_tokenize) on the same file.
// Chat templates: the model's tokenizer.chat_template is recognised by family (ChatML,
// Llama 2, Llama 3, ...), including a default system message the template inserts.
// Immutable after create(); thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/core/status.h"

namespace prima::real {

class GgufFile;

struct VocabData {
  std::string model = "gpt2";   // tokenizer.ggml.model
  std::string pre = "default";  // tokenizer.ggml.pre
  std::vector<std::string> tokens;
  std::vector<float> scores;  // llama (SentencePiece) merges by score
  std::vector<int> types;     // 1 normal, 2 unknown, 3 control, 4 user defined, 5 unused, 6 byte
  std::vector<std::string> merges;  // gpt2: "left right"
  int bos = -1, eos = -1, eot = -1, unk = -1, pad = -1;
  bool add_bos = false, add_eos = false, add_space_prefix = false;
  std::string chat_template;
};

Result<VocabData> vocab_from_gguf(const GgufFile& f);

struct ChatMessage {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

class Tokenizer {
 public:
  static Result<std::unique_ptr<Tokenizer>> create(VocabData v);
  ~Tokenizer();

  // add_special: add BOS (and EOS) where the vocabulary says so.
  std::vector<int> encode(std::string_view text, bool add_special, bool parse_special) const;
  // The text of the tokens (byte-level decoding; partial UTF-8 sequences are kept as bytes).
  std::string decode(const std::vector<int>& ids, bool skip_special = false) const;
  std::string piece(int id) const;  // one token's text (bytes)
  int vocab_size() const;
  int bos() const;
  int eos() const;
  // End-of-generation ids: eos, eot and control tokens such as <|im_end|>, <|eot_id|>.
  std::vector<int> eog_ids() const;
  bool is_special(int id) const;

  // Renders messages with the model's chat template (error if unknown or absent).
  Result<std::string> apply_chat_template(const std::vector<ChatMessage>& messages,
                                          bool add_generation_prompt) const;
  // Family the template was recognised as ("chatml", "llama2", "llama3", ...), or "".
  std::string chat_family() const;

 private:
  Tokenizer();
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace prima::real
