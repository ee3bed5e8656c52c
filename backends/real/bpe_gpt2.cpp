// GPT-2 byte-level BPE: a piece's bytes become the vocabulary's printable stand-ins (one
// symbol per byte), then the adjacent pair with the lowest merge rank is merged, leftmost
// first on ties, until no pair has a rank. A min-heap of candidate pairs over a linked list
// of symbols makes this O(n log n) per piece; stale heap entries are skipped when popped.
// Immutable after build(); thread-safe.
#include <queue>

#include "backends/real/tokenizer_internal.h"

namespace prima::real::tok {

namespace {

std::uint64_t pair_key(int a, int b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) |
         static_cast<std::uint32_t>(b);
}

}  // namespace

Result<Gpt2Bpe> Gpt2Bpe::build(const VocabData& v,
                               const std::unordered_map<std::string, int>& ids) {
  Gpt2Bpe b;
  b.ids_ = &ids;
  b.unk_ = v.unk;
  for (int byte = 0; byte < 256; ++byte) {
    auto it = ids.find(utf8_encode(byte_to_cp(static_cast<std::uint8_t>(byte))));
    b.byte_ids_[byte] = it == ids.end() ? -1 : it->second;
  }
  b.merges_.reserve(v.merges.size() * 2);
  for (std::size_t r = 0; r < v.merges.size(); ++r) {
    const std::string& m = v.merges[r];
    // The separator is the first space that is not the merge's first character.
    const std::size_t sp = m.find(' ', 1);
    if (sp == std::string::npos || sp + 1 >= m.size()) {
      return invalid_argument("tokenizer.ggml.merges[" + std::to_string(r) + "]: \"" + m +
                              "\" is not \"left right\"");
    }
    const std::string left = m.substr(0, sp), right = m.substr(sp + 1);
    auto l = ids.find(left), rr = ids.find(right), merged = ids.find(left + right);
    if (l == ids.end() || rr == ids.end() || merged == ids.end()) continue;  // unusable merge
    b.merges_.emplace(pair_key(l->second, rr->second),
                      std::make_pair(static_cast<int>(r), merged->second));
  }
  return b;
}

void Gpt2Bpe::encode_piece(std::string_view bytes, bool ignore_merges,
                           std::vector<int>* out) const {
  if (bytes.empty()) return;
  if (ignore_merges) {
    std::string mapped;
    for (unsigned char ch : bytes) mapped += utf8_encode(byte_to_cp(ch));
    if (auto it = ids_->find(mapped); it != ids_->end()) {
      out->push_back(it->second);
      return;
    }
  }
  const int n = static_cast<int>(bytes.size());
  if (n == 1) {
    const int id = byte_ids_[static_cast<unsigned char>(bytes[0])];
    if (id >= 0 || unk_ >= 0) out->push_back(id >= 0 ? id : unk_);
    return;
  }
  struct Sym {
    int id, prev, next;
  };
  std::vector<Sym> s(n);
  for (int i = 0; i < n; ++i) {
    s[i] = {byte_ids_[static_cast<unsigned char>(bytes[i])], i - 1, i + 1 < n ? i + 1 : -1};
  }
  struct Cand {
    int rank, left, lid, rid;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : left > o.left; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto consider = [&](int left) {
    if (left < 0) return;
    const int right = s[left].next;
    if (right < 0 || s[left].id < 0 || s[right].id < 0) return;
    auto it = merges_.find(pair_key(s[left].id, s[right].id));
    if (it != merges_.end()) heap.push({it->second.first, left, s[left].id, s[right].id});
  };
  for (int i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    const Cand c = heap.top();
    heap.pop();
    Sym& l = s[c.left];
    if (l.id != c.lid || l.next < 0 || s[l.next].id != c.rid) continue;  // stale
    const int r = l.next;
    l.id = merges_.at(pair_key(c.lid, c.rid)).second;
    l.next = s[r].next;
    if (l.next >= 0) s[l.next].prev = c.left;
    s[r].id = -2;  // dead
    consider(l.prev);
    consider(c.left);
  }
  for (int i = 0; i >= 0; i = s[i].next) {
    if (s[i].id >= 0) {
      out->push_back(s[i].id);
    } else if (unk_ >= 0) {
      out->push_back(unk_);
    }
  }
}

}  // namespace prima::real::tok
