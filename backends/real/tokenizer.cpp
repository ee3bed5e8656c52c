// Tokenizer: special-token partitioning, dispatch to the GPT-2 byte-level or SentencePiece
// BPE encoder, decoding, end-of-generation ids and the chat template.
// Special tokens are matched as llama.cpp does: longest token text first, every occurrence in
// the remaining text; CONTROL and UNKNOWN tokens only with parse_special, USER_DEFINED tokens
// always. Immutable after create(); thread-safe.
#include "backends/real/tokenizer.h"

#include <algorithm>
#include <optional>

#include "backends/real/tokenizer_internal.h"

namespace prima::real {

namespace {

constexpr int kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kByte = 6;

struct Fragment {
  int id;  // -1: text
  std::string_view text;
};

}  // namespace

struct Tokenizer::Impl {
  VocabData v;
  std::unordered_map<std::string, int> ids;
  bool spm = false;
  tok::PreType pre = tok::PreType::kGpt2;
  std::optional<tok::Gpt2Bpe> gpt2;
  std::optional<tok::SpmBpe> spm_bpe;
  std::vector<int> specials;  // CONTROL, USER_DEFINED, UNKNOWN; longest text first
  std::vector<int> eog;
  tok::ChatTemplate chat;

  int type(int id) const { return v.types[static_cast<std::size_t>(id)]; }
  std::vector<Fragment> partition(std::string_view text, bool parse_special) const;
  std::string piece(int id) const;
};

Tokenizer::Tokenizer() : impl_(std::make_unique<Impl>()) {}
Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::create(VocabData v) {
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  Impl& m = *t->impl_;
  m.v = std::move(v);
  VocabData& d = m.v;
  const int n = static_cast<int>(d.tokens.size());
  if (n == 0) return invalid_argument("tokenizer: empty vocabulary");
  if (d.types.empty()) d.types.assign(n, kNormal);
  if (static_cast<int>(d.types.size()) != n) {
    return invalid_argument("tokenizer: " + std::to_string(d.types.size()) + " token types for " +
                            std::to_string(n) + " tokens");
  }
  for (int* id : {&d.bos, &d.eos, &d.eot, &d.unk, &d.pad}) {
    if (*id >= n) {
      return invalid_argument("tokenizer: special token id " + std::to_string(*id) +
                              " is outside the vocabulary of " + std::to_string(n));
    }
  }
  m.ids.reserve(n * 2);
  for (int i = 0; i < n; ++i) m.ids[d.tokens[i]] = i;
  if (d.model == "gpt2") {
    auto pre = tok::pre_type_from_name(d.pre);
    if (!pre.ok()) return pre.status();
    m.pre = *pre;
    auto b = tok::Gpt2Bpe::build(d, m.ids);
    if (!b.ok()) return b.status();
    m.gpt2.emplace(std::move(b.value()));
  } else if (d.model == "llama") {
    m.spm = true;
    auto b = tok::SpmBpe::build(d, m.ids);
    if (!b.ok()) return b.status();
    m.spm_bpe.emplace(std::move(b.value()));
  } else {
    return invalid_argument("tokenizer: unsupported model \"" + d.model +
                            "\" (supported: gpt2, llama)");
  }
  for (int i = 0; i < n; ++i) {
    const int ty = d.types[i];
    if ((ty == kControl || ty == kUserDefined || ty == kUnknown) && !d.tokens[i].empty()) {
      m.specials.push_back(i);
    }
  }
  std::stable_sort(m.specials.begin(), m.specials.end(),
                   [&](int a, int b) { return d.tokens[a].size() > d.tokens[b].size(); });
  static const char* const kEogTexts[] = {"<|im_end|>",    "<|eot_id|>", "<|end_of_text|>",
                                          "<|endoftext|>", "</s>",       "<end_of_turn>"};
  if (d.eos >= 0) m.eog.push_back(d.eos);
  if (d.eot >= 0) m.eog.push_back(d.eot);
  for (const char* text : kEogTexts) {
    auto it = m.ids.find(text);
    if (it != m.ids.end() &&
        (d.types[it->second] == kControl || d.types[it->second] == kUserDefined)) {
      m.eog.push_back(it->second);
    }
  }
  std::sort(m.eog.begin(), m.eog.end());
  m.eog.erase(std::unique(m.eog.begin(), m.eog.end()), m.eog.end());
  m.chat = tok::recognise_chat_template(d.chat_template, d.bos >= 0 ? d.tokens[d.bos] : "",
                                        d.eos >= 0 ? d.tokens[d.eos] : "");
  return t;
}

std::vector<Fragment> Tokenizer::Impl::partition(std::string_view text, bool parse_special) const {
  std::vector<Fragment> frags;
  if (!text.empty()) frags.push_back({-1, text});
  for (int id : specials) {
    const int ty = type(id);
    if (!parse_special && (ty == kControl || ty == kUnknown)) continue;
    const std::string& s = v.tokens[id];
    std::vector<Fragment> next;
    next.reserve(frags.size());
    for (const Fragment& f : frags) {
      if (f.id >= 0 || f.text.size() < s.size()) {
        next.push_back(f);
        continue;
      }
      std::string_view rest = f.text;
      for (std::size_t p; (p = rest.find(s)) != std::string_view::npos;) {
        if (p > 0) next.push_back({-1, rest.substr(0, p)});
        next.push_back({id, {}});
        rest.remove_prefix(p + s.size());
      }
      if (!rest.empty()) next.push_back({-1, rest});
    }
    frags = std::move(next);
  }
  return frags;
}

std::vector<int> Tokenizer::encode(std::string_view text, bool add_special,
                                   bool parse_special) const {
  const Impl& m = *impl_;
  std::vector<int> out;
  if (add_special && m.v.add_bos && m.v.bos >= 0) out.push_back(m.v.bos);
  const std::vector<Fragment> frags = m.partition(text, parse_special);
  if (m.spm) {
    bool prev_special = true;  // the first text gets the space prefix, as after a special token
    std::string buf;
    for (const Fragment& f : frags) {
      if (f.id >= 0) {
        out.push_back(f.id);
        prev_special = true;
        continue;
      }
      buf.clear();
      if (m.v.add_space_prefix && prev_special) buf += "\xE2\x96\x81";
      for (char c : f.text) {
        if (c == ' ') {
          buf += "\xE2\x96\x81";
        } else {
          buf += c;
        }
      }
      m.spm_bpe->encode(buf, &out);
      prev_special = false;
    }
  } else {
    const bool ignore_merges = m.pre == tok::PreType::kLlama3;
    std::vector<std::string_view> pieces;
    for (const Fragment& f : frags) {
      if (f.id >= 0) {
        out.push_back(f.id);
        continue;
      }
      pieces.clear();
      tok::pretokenize(m.pre, f.text, &pieces);
      for (std::string_view p : pieces) m.gpt2->encode_piece(p, ignore_merges, &out);
    }
  }
  if (add_special && m.v.add_eos && m.v.eos >= 0) out.push_back(m.v.eos);
  return out;
}

std::string Tokenizer::Impl::piece(int id) const {
  if (id < 0 || id >= static_cast<int>(v.tokens.size())) return "";
  const std::string& t = v.tokens[id];
  const int ty = type(id);
  if (ty == kControl || ty == kUserDefined) return t;
  if (spm) {
    if (ty == kByte && t.size() == 6 && t.compare(0, 3, "<0x") == 0) {
      return std::string(1, static_cast<char>(std::stoi(t.substr(3, 2), nullptr, 16)));
    }
    if (ty == kUnknown) return "\xE2\x96\x85";  // ▅, as llama.cpp shows an unknown piece
    std::string out;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t.compare(i, 3, "\xE2\x96\x81") == 0) {
        out += ' ';
        i += 2;
      } else {
        out += t[i];
      }
    }
    return out;
  }
  std::string out;
  for (const tok::Cp& c : tok::utf8_chars(t)) {
    const int b = tok::cp_to_byte(c.cp);
    if (b >= 0) {
      out += static_cast<char>(b);
    } else {
      out.append(t, c.off, c.len);
    }
  }
  return out;
}

std::string Tokenizer::piece(int id) const {
  return impl_->piece(id);
}

std::string Tokenizer::decode(const std::vector<int>& ids, bool skip_special) const {
  const Impl& m = *impl_;
  std::string out;
  bool first_text = true;
  for (int id : ids) {
    if (skip_special && is_special(id)) continue;
    std::string p = m.piece(id);
    if (id >= 0 && id < vocab_size() && m.type(id) != kControl) {
      // SentencePiece: the space the encoder put before the text is not part of it.
      if (first_text && m.spm && m.v.add_space_prefix && !p.empty() && p[0] == ' ') {
        p.erase(0, 1);
      }
      first_text = false;
    }
    out += p;
  }
  return out;
}

int Tokenizer::vocab_size() const {
  return static_cast<int>(impl_->v.tokens.size());
}
int Tokenizer::bos() const {
  return impl_->v.bos;
}
int Tokenizer::eos() const {
  return impl_->v.eos;
}
std::vector<int> Tokenizer::eog_ids() const {
  return impl_->eog;
}

bool Tokenizer::is_special(int id) const {
  const Impl& m = *impl_;
  if (id < 0 || id >= vocab_size()) return false;
  return m.type(id) == kControl || id == m.v.bos || id == m.v.eos || id == m.v.eot;
}

Result<std::string> Tokenizer::apply_chat_template(const std::vector<ChatMessage>& messages,
                                                   bool add_generation_prompt) const {
  const Impl& m = *impl_;
  if (m.v.chat_template.empty()) {
    return invalid_argument("tokenizer.chat_template: the model has no chat template");
  }
  return tok::render_chat(m.chat, messages, add_generation_prompt);
}

std::string Tokenizer::chat_family() const {
  return impl_->chat.family;
}

}  // namespace prima::real
