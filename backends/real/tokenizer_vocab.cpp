// vocab_from_gguf: the tokenizer.ggml.* metadata (and tokenizer.chat_template) of a GGUF file
// as VocabData. Required: model, tokens (and merges for "gpt2"); the rest are optional with
// llama.cpp's defaults (llama: add_bos and add_space_prefix on; gpt2: off). A key that is
// present with the wrong type, or an array of the wrong length, is an error naming the key.
// Pure function of the file; thread-safe.
#include "backends/real/gguf.h"
#include "backends/real/tokenizer.h"

namespace prima::real {

namespace {

std::string where(const GgufFile& f, const std::string& key) {
  return f.path() + ": " + key;
}

Status optional_id(const GgufFile& f, const std::string& key, int n_tokens, int* out) {
  if (f.find(key) == nullptr) return ok_status();
  auto v = f.get_int(key);
  if (!v.ok()) return v.status();
  if (*v < 0 || *v >= n_tokens) {
    return invalid_argument(where(f, key) + ": token id " + std::to_string(*v) +
                            " is outside the vocabulary of " + std::to_string(n_tokens));
  }
  *out = static_cast<int>(*v);
  return ok_status();
}

Status optional_bool(const GgufFile& f, const std::string& key, bool* out) {
  if (f.find(key) == nullptr) return ok_status();
  auto v = f.get_bool(key);
  if (!v.ok()) return v.status();
  *out = *v;
  return ok_status();
}

Result<const GgufArray*> array_of(const GgufFile& f, const std::string& key, GgufType want_a,
                                  GgufType want_b, const char* what) {
  auto a = f.get_array(key);
  if (!a.ok()) return a.status();
  if ((*a)->elem != want_a && (*a)->elem != want_b) {
    return invalid_argument(where(f, key) + ": expected an array of " + what +
                            ", found element type " +
                            std::to_string(static_cast<std::uint32_t>((*a)->elem)));
  }
  return *a;
}

bool is_numeric(GgufType t) {
  return t != GgufType::kString && t != GgufType::kArray;
}

}  // namespace

Result<VocabData> vocab_from_gguf(const GgufFile& f) {
  VocabData v;
  auto model = f.get_string("tokenizer.ggml.model");
  if (!model.ok()) return model.status();
  v.model = *model;
  if (v.model != "gpt2" && v.model != "llama") {
    return invalid_argument(where(f, "tokenizer.ggml.model") + ": unsupported model \"" + v.model +
                            "\" (supported: gpt2, llama)");
  }
  if (f.find("tokenizer.ggml.pre") != nullptr) {
    auto pre = f.get_string("tokenizer.ggml.pre");
    if (!pre.ok()) return pre.status();
    v.pre = *pre;
  }
  auto tokens =
      array_of(f, "tokenizer.ggml.tokens", GgufType::kString, GgufType::kString, "strings");
  if (!tokens.ok()) return tokens.status();
  v.tokens = (*tokens)->strings;
  const int n = static_cast<int>(v.tokens.size());
  if (n == 0) return invalid_argument(where(f, "tokenizer.ggml.tokens") + ": empty vocabulary");

  if (f.find("tokenizer.ggml.scores") != nullptr) {
    auto a = f.get_array("tokenizer.ggml.scores");
    if (!a.ok()) return a.status();
    if (!is_numeric((*a)->elem) || (*a)->numbers.size() != v.tokens.size()) {
      return invalid_argument(where(f, "tokenizer.ggml.scores") + ": expected " +
                              std::to_string(n) + " numbers, found " +
                              std::to_string((*a)->numbers.size()));
    }
    v.scores.assign((*a)->numbers.begin(), (*a)->numbers.end());
  }
  if (f.find("tokenizer.ggml.token_type") != nullptr) {
    auto a = f.get_array("tokenizer.ggml.token_type");
    if (!a.ok()) return a.status();
    if (!is_numeric((*a)->elem) || (*a)->numbers.size() != v.tokens.size()) {
      return invalid_argument(where(f, "tokenizer.ggml.token_type") + ": expected " +
                              std::to_string(n) + " integers, found " +
                              std::to_string((*a)->numbers.size()));
    }
    v.types.reserve(n);
    for (double x : (*a)->numbers) v.types.push_back(static_cast<int>(x));
  } else {
    v.types.assign(n, 1);
  }
  if (f.find("tokenizer.ggml.merges") != nullptr || v.model == "gpt2") {
    auto merges =
        array_of(f, "tokenizer.ggml.merges", GgufType::kString, GgufType::kString, "strings");
    if (!merges.ok()) return merges.status();
    v.merges = (*merges)->strings;
  }

  if (Status s = optional_id(f, "tokenizer.ggml.bos_token_id", n, &v.bos); !s.ok()) return s;
  if (Status s = optional_id(f, "tokenizer.ggml.eos_token_id", n, &v.eos); !s.ok()) return s;
  if (Status s = optional_id(f, "tokenizer.ggml.eot_token_id", n, &v.eot); !s.ok()) return s;
  if (Status s = optional_id(f, "tokenizer.ggml.unknown_token_id", n, &v.unk); !s.ok()) return s;
  if (Status s = optional_id(f, "tokenizer.ggml.padding_token_id", n, &v.pad); !s.ok()) return s;

  v.add_bos = v.model == "llama";
  v.add_space_prefix = v.model == "llama";
  if (Status s = optional_bool(f, "tokenizer.ggml.add_bos_token", &v.add_bos); !s.ok()) return s;
  if (Status s = optional_bool(f, "tokenizer.ggml.add_eos_token", &v.add_eos); !s.ok()) return s;
  if (Status s = optional_bool(f, "tokenizer.ggml.add_space_prefix", &v.add_space_prefix);
      !s.ok()) {
    return s;
  }
  if (f.find("tokenizer.chat_template") != nullptr) {
    auto t = f.get_string("tokenizer.chat_template");
    if (!t.ok()) return t.status();
    v.chat_template = *t;
  }
  return v;
}

}  // namespace prima::real
