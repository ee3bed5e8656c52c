// Pre-tokenizers of byte-level BPE vocabularies, matched by hand over code points (the regex
// semantics: alternatives tried in order at each position, greedy, lookahead bounded by the
// piece being split). Named by tokenizer.ggml.pre:
//   "gpt2", "default": 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
//   "smollm" (and other StarCoder-style vocabularies): first \p{N} (every digit is a piece of
//       its own), then the GPT-2 expression inside each piece;
//   "llama3": (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
//       ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
// Pure functions; thread-safe.
#include <algorithm>

#include "backends/real/tokenizer_internal.h"

namespace prima::real::tok {

Result<PreType> pre_type_from_name(const std::string& name) {
  if (name == "gpt2" || name == "default" || name.empty()) return PreType::kGpt2;
  if (name == "smollm" || name == "starcoder" || name == "refact" || name == "codeshell") {
    return PreType::kSmollm;
  }
  if (name == "llama3" || name == "llama-bpe" || name == "llama-v3") return PreType::kLlama3;
  return invalid_argument("tokenizer.ggml.pre: unsupported pre-tokenizer \"" + name +
                          "\" (supported: gpt2, default, smollm, starcoder, llama3)");
}

namespace {

bool is_other(char32_t c) {
  return !is_whitespace(c) && !is_letter(c) && !is_number(c);
}
char32_t lower_ascii(char32_t c) {
  return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

// Length (in characters) of a contraction at i, or 0.
std::size_t contraction(const Cp* c, std::size_t n, std::size_t i, bool any_case) {
  if (c[i].cp != '\'' || i + 1 >= n) return 0;
  auto at = [&](std::size_t k) { return any_case ? lower_ascii(c[k].cp) : c[k].cp; };
  const char32_t a = at(i + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 < n) {
    const char32_t b = at(i + 2);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  }
  return 0;
}

template <typename Pred>
std::size_t run(const Cp* c, std::size_t n, std::size_t i, Pred p) {
  std::size_t k = i;
  while (k < n && p(c[k].cp)) ++k;
  return k - i;
}

// \s+(?!\S) | \s+ at i (c[i] is whitespace).
std::size_t whitespace_tail(const Cp* c, std::size_t n, std::size_t i) {
  const std::size_t r = run(c, n, i, is_whitespace);
  if (i + r == n) return r;
  return r > 1 ? r - 1 : 1;
}

std::size_t match_gpt2(const Cp* c, std::size_t n, std::size_t i) {
  if (std::size_t k = contraction(c, n, i, false)) return k;
  const std::size_t sp = (c[i].cp == ' ' && i + 1 < n) ? 1 : 0;
  const char32_t h = c[i + sp].cp;
  if (is_letter(h)) return sp + run(c, n, i + sp, is_letter);
  if (is_number(h)) return sp + run(c, n, i + sp, is_number);
  if (is_other(h)) return sp + run(c, n, i + sp, is_other);
  return whitespace_tail(c, n, i);
}

std::size_t match_llama3(const Cp* c, std::size_t n, std::size_t i) {
  if (std::size_t k = contraction(c, n, i, true)) return k;
  const char32_t h = c[i].cp;
  if (is_letter(h)) return run(c, n, i, is_letter);
  if (h != '\r' && h != '\n' && !is_number(h) && i + 1 < n && is_letter(c[i + 1].cp)) {
    return 1 + run(c, n, i + 1, is_letter);
  }
  if (is_number(h)) return std::min<std::size_t>(3, run(c, n, i, is_number));
  const std::size_t sp = (h == ' ' && i + 1 < n) ? 1 : 0;
  if (is_other(c[i + sp].cp)) {
    std::size_t k = sp + run(c, n, i + sp, is_other);
    k += run(c, n, i + k, [](char32_t x) { return x == '\r' || x == '\n'; });
    return k;
  }
  // c[i] is whitespace: \s*[\r\n]+ ends after the run's last \r or \n.
  const std::size_t r = run(c, n, i, is_whitespace);
  for (std::size_t k = r; k > 0; --k) {
    if (c[i + k - 1].cp == '\r' || c[i + k - 1].cp == '\n') return k;
  }
  return whitespace_tail(c, n, i);
}

void split(const Cp* c, std::size_t n, std::string_view text, PreType type,
           std::vector<std::string_view>* out) {
  std::size_t i = 0;
  while (i < n) {
    const std::size_t k = type == PreType::kLlama3 ? match_llama3(c, n, i) : match_gpt2(c, n, i);
    const std::size_t b = c[i].off;
    const std::size_t e = c[i + k - 1].off + c[i + k - 1].len;
    out->push_back(text.substr(b, e - b));
    i += k;
  }
}

}  // namespace

void pretokenize(PreType type, std::string_view text, std::vector<std::string_view>* out) {
  const std::vector<Cp> cps = utf8_chars(text);
  const Cp* c = cps.data();
  const std::size_t n = cps.size();
  if (type != PreType::kSmollm) {
    split(c, n, text, type, out);
    return;
  }
  // \p{N} first: each number character is a piece; the runs between are split with GPT-2's.
  std::size_t i = 0;
  while (i < n) {
    if (is_number(c[i].cp)) {
      out->push_back(text.substr(c[i].off, c[i].len));
      ++i;
      continue;
    }
    const std::size_t k = run(c, n, i, [](char32_t x) { return !is_number(x); });
    split(c + i, k, text, PreType::kGpt2, out);
    i += k;
  }
}

}  // namespace prima::real::tok
