// SentencePiece-style BPE (tokenizer.ggml.model "llama"): the text (spaces already "▁") starts
// as one symbol per UTF-8 character; the adjacent pair whose concatenation is a token with the
// highest score is merged (leftmost first on ties) until no pair is a token. A final symbol
// that is not a token is split back into the pieces it was merged from, and a character that
// is not a token falls back to its bytes' <0xXX> tokens (or unknown).
// Immutable after build(); thread-safe.
#include <cstdio>
#include <queue>

#include "backends/real/tokenizer_internal.h"

namespace prima::real::tok {

Result<SpmBpe> SpmBpe::build(const VocabData& v, const std::unordered_map<std::string, int>& ids) {
  if (v.scores.size() != v.tokens.size()) {
    return invalid_argument("tokenizer.ggml.scores: " + std::to_string(v.scores.size()) +
                            " scores for " + std::to_string(v.tokens.size()) +
                            " tokens (model \"llama\" merges by score)");
  }
  SpmBpe b;
  b.v_ = &v;
  b.ids_ = &ids;
  for (int byte = 0; byte < 256; ++byte) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", byte);
    auto it = ids.find(name);
    b.byte_tokens_[byte] = it == ids.end() ? -1 : it->second;
  }
  return b;
}

void SpmBpe::resegment(const std::string& sym, const RevMerge& rev, std::vector<int>* out) const {
  if (auto it = ids_->find(sym); it != ids_->end()) {
    out->push_back(it->second);
    return;
  }
  if (auto it = rev.find(sym); it != rev.end()) {
    resegment(it->second.first, rev, out);
    resegment(it->second.second, rev, out);
    return;
  }
  for (unsigned char ch : sym) {
    const int id = byte_tokens_[ch];
    if (id >= 0) {
      out->push_back(id);
    } else if (v_->unk >= 0) {
      out->push_back(v_->unk);
    }
  }
}

void SpmBpe::encode(std::string_view text, std::vector<int>* out) const {
  const std::vector<Cp> cps = utf8_chars(text);
  const int n = static_cast<int>(cps.size());
  if (n == 0) return;
  struct Sym {
    std::uint32_t off, len;
    int prev, next;
  };
  std::vector<Sym> s(n);
  for (int i = 0; i < n; ++i) s[i] = {cps[i].off, cps[i].len, i - 1, i + 1 < n ? i + 1 : -1};
  struct Cand {
    float score;
    int left;
    std::uint32_t len;  // bytes of the merged text when the candidate was made
    bool operator<(const Cand& o) const {
      return score != o.score ? score < o.score : left > o.left;
    }
  };
  std::priority_queue<Cand> heap;
  RevMerge rev;
  auto consider = [&](int left) {
    if (left < 0 || s[left].next < 0) return;
    const Sym& l = s[left];
    const Sym& r = s[l.next];
    std::string merged(text.substr(l.off, l.len + r.len));
    auto it = ids_->find(merged);
    if (it == ids_->end()) return;
    heap.push({v_->scores[it->second], left, l.len + r.len});
    rev.emplace(merged, std::make_pair(std::string(text.substr(l.off, l.len)),
                                       std::string(text.substr(r.off, r.len))));
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& l = s[c.left];
    if (l.len == 0 || l.next < 0 || l.len + s[l.next].len != c.len) continue;  // stale
    Sym& r = s[l.next];
    l.len += r.len;
    r.len = 0;
    l.next = r.next;
    if (l.next >= 0) s[l.next].prev = c.left;
    consider(l.prev);
    consider(c.left);
  }
  for (int i = 0; i >= 0; i = s[i].next) {
    resegment(std::string(text.substr(s[i].off, s[i].len)), rev, out);
  }
}

}  // namespace prima::real::tok
