// Byte encoding of StepInput (little-endian host order; every rank runs the same binary on
// the same kind of host). Stateless; thread-safe.
#include "backends/real/step_codec.h"

#include <cstring>
#include <string>

namespace prima::real {

std::int64_t StepInput::total_tokens() const {
  std::int64_t n = 0;
  for (const auto& s : seqs) n += static_cast<std::int64_t>(s.tokens.size());
  return n;
}

int StepInput::sampled_rows() const {
  int n = 0;
  for (const auto& s : seqs) n += s.samples ? 1 : 0;
  return n;
}

bool StepInput::wants_logprobs() const {
  for (const auto& s : seqs)
    if (s.samples && s.sampling.logprobs >= 0) return true;
  return false;
}

std::vector<std::int64_t> StepInput::logit_rows() const {
  std::vector<std::int64_t> rows;
  std::int64_t row = 0;
  for (const auto& s : seqs) {
    for (std::size_t j = 0; j < s.score_ids.size() && j < s.tokens.size(); ++j)
      rows.push_back(row + static_cast<std::int64_t>(j));
    row += static_cast<std::int64_t>(s.tokens.size());
    if (s.samples) rows.push_back(row - 1);
  }
  return rows;
}

bool StepInput::wants_prompt_logprobs() const {
  for (const auto& s : seqs)
    if (!s.score_ids.empty()) return true;
  return false;
}

namespace {

struct Writer {
  std::vector<std::uint8_t> out;
  template <typename T>
  void put(const T& v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    out.insert(out.end(), p, p + sizeof(T));
  }
  void put_ints(const std::vector<int>& v) {
    put<std::uint32_t>(static_cast<std::uint32_t>(v.size()));
    const auto* p = reinterpret_cast<const std::uint8_t*>(v.data());
    out.insert(out.end(), p, p + v.size() * sizeof(int));
  }
};

struct Reader {
  const std::vector<std::uint8_t>& in;
  std::size_t off = 0;
  Status err;
  template <typename T>
  T get() {
    T v{};
    if (!err.ok()) return v;
    if (off + sizeof(T) > in.size()) {
      err = invalid_argument("step message: truncated at byte " + std::to_string(off) + " of " +
                             std::to_string(in.size()));
      return v;
    }
    std::memcpy(&v, in.data() + off, sizeof(T));
    off += sizeof(T);
    return v;
  }
  std::vector<int> get_ints() {
    const auto n = get<std::uint32_t>();
    std::vector<int> v;
    if (!err.ok()) return v;
    if (off + std::size_t(n) * sizeof(int) > in.size()) {
      err = invalid_argument("step message: int array of " + std::to_string(n) +
                             " elements at byte " + std::to_string(off) + " runs past the end (" +
                             std::to_string(in.size()) + " bytes)");
      return v;
    }
    v.resize(n);
    std::memcpy(v.data(), in.data() + off, std::size_t(n) * sizeof(int));
    off += std::size_t(n) * sizeof(int);
    return v;
  }
};

constexpr std::uint32_t kMagic = 0x50455453;       // "STEP"
constexpr std::uint32_t kReplyMagic = 0x594c5052;  // "RPLY"

void put_logprobs(Writer* w, const std::vector<TokenLogprobs>& lps) {
  w->put(static_cast<std::uint32_t>(lps.size()));
  for (const TokenLogprobs& lp : lps) {
    w->put(lp.logprob);
    w->put(static_cast<std::uint32_t>(lp.top.size()));
    for (const auto& [id, p] : lp.top) {
      w->put(static_cast<std::int32_t>(id));
      w->put(p);
    }
  }
}

// A list written by put_logprobs; errors name the byte offset.
Status get_logprobs(Reader* r, std::vector<TokenLogprobs>* out) {
  const auto n = r->get<std::uint32_t>();
  // Each entry takes at least 8 bytes: a count past the end is a corrupt message.
  if (r->err.ok() && r->off + std::size_t(n) * 8 > r->in.size())
    return invalid_argument("step reply: " + std::to_string(n) + " log-probabilities at byte " +
                            std::to_string(r->off) + " run past the end");
  for (std::uint32_t i = 0; i < n && r->err.ok(); ++i) {
    TokenLogprobs lp;
    lp.logprob = r->get<float>();
    const auto top = r->get<std::uint32_t>();
    if (r->err.ok() && top > static_cast<std::uint32_t>(SamplingParams::kMaxTopLogprobs))
      return invalid_argument("step reply: " + std::to_string(top) +
                              " top log-probabilities at byte " + std::to_string(r->off) +
                              " exceed " + std::to_string(SamplingParams::kMaxTopLogprobs));
    for (std::uint32_t k = 0; k < top && r->err.ok(); ++k) {
      const int id = r->get<std::int32_t>();
      lp.top.emplace_back(id, r->get<float>());
    }
    out->push_back(std::move(lp));
  }
  return r->err;
}

}  // namespace

std::vector<std::uint8_t> encode_step(const StepInput& s) {
  Writer w;
  w.put(kMagic);
  w.put(s.step_id);
  w.put(static_cast<std::uint8_t>(s.kind));
  w.put(static_cast<std::uint32_t>(s.seqs.size()));
  for (const auto& q : s.seqs) {
    w.put(q.request);
    w.put(q.pos0);
    w.put(static_cast<std::uint8_t>(q.samples));
    w.put(q.sampling.temperature);
    w.put(static_cast<std::int32_t>(q.sampling.top_k));
    w.put(q.sampling.top_p);
    w.put(q.sampling.seed);
    w.put(q.sampling.presence_penalty);
    w.put(q.sampling.frequency_penalty);
    w.put(q.sampling.repetition_penalty);
    w.put(q.sampling.typical_p);
    w.put(q.sampling.min_p);
    w.put(static_cast<std::int32_t>(q.sampling.logprobs));
    w.put(static_cast<std::int32_t>(q.sampling.prompt_logprobs));
    w.put(static_cast<std::uint32_t>(q.sampling.logit_bias.size()));
    for (const auto& [id, bias] : q.sampling.logit_bias) {
      w.put(static_cast<std::int32_t>(id));
      w.put(bias);
    }
    w.put_ints(q.tokens);
    w.put_ints(q.blocks);
    w.put_ints(q.prompt_history);
    w.put_ints(q.output_history);
    w.put_ints(q.score_ids);
  }
  return std::move(w.out);
}

Result<StepInput> decode_step(const std::vector<std::uint8_t>& bytes) {
  Reader r{bytes, 0, ok_status()};
  StepInput s;
  if (r.get<std::uint32_t>() != kMagic && r.err.ok())
    return invalid_argument("step message: bad magic at byte 0");
  s.step_id = r.get<std::uint64_t>();
  const auto kind = r.get<std::uint8_t>();
  if (kind > static_cast<std::uint8_t>(StepKind::kFinish) && r.err.ok())
    return invalid_argument("step message: unknown step kind " + std::to_string(kind) +
                            " at byte 12");
  s.kind = static_cast<StepKind>(kind);
  const auto n = r.get<std::uint32_t>();
  for (std::uint32_t i = 0; i < n && r.err.ok(); ++i) {
    SeqInput q;
    q.request = r.get<std::uint64_t>();
    q.pos0 = r.get<std::int64_t>();
    q.samples = r.get<std::uint8_t>() != 0;
    q.sampling.temperature = r.get<double>();
    q.sampling.top_k = r.get<std::int32_t>();
    q.sampling.top_p = r.get<double>();
    q.sampling.seed = r.get<std::uint64_t>();
    q.sampling.presence_penalty = r.get<double>();
    q.sampling.frequency_penalty = r.get<double>();
    q.sampling.repetition_penalty = r.get<double>();
    q.sampling.typical_p = r.get<double>();
    q.sampling.min_p = r.get<double>();
    q.sampling.logprobs = r.get<std::int32_t>();
    q.sampling.prompt_logprobs = r.get<std::int32_t>();
    const auto nbias = r.get<std::uint32_t>();
    if (r.err.ok() && r.off + std::size_t(nbias) * 8 > bytes.size())
      return invalid_argument("step message: logit_bias of " + std::to_string(nbias) +
                              " entries at byte " + std::to_string(r.off) + " runs past the end");
    for (std::uint32_t k = 0; k < nbias && r.err.ok(); ++k) {
      const int id = r.get<std::int32_t>();
      q.sampling.logit_bias.emplace_back(id, r.get<float>());
    }
    q.tokens = r.get_ints();
    q.blocks = r.get_ints();
    q.prompt_history = r.get_ints();
    q.output_history = r.get_ints();
    q.score_ids = r.get_ints();
    if (r.err.ok() && q.score_ids.size() > q.tokens.size())
      return invalid_argument("step message: " + std::to_string(q.score_ids.size()) +
                              " scored prompt tokens for a chunk of " +
                              std::to_string(q.tokens.size()) + " at byte " +
                              std::to_string(r.off));
    s.seqs.push_back(std::move(q));
  }
  if (!r.err.ok()) return r.err;
  if (r.off != bytes.size())
    return invalid_argument("step message: " + std::to_string(bytes.size() - r.off) +
                            " trailing bytes at byte " + std::to_string(r.off));
  return s;
}

std::vector<std::uint8_t> encode_reply(const Status& st, const SampledTokens& t) {
  Writer w;
  w.put(kReplyMagic);
  w.put(static_cast<std::uint8_t>(st.code()));
  w.put(static_cast<std::uint32_t>(st.message().size()));
  w.out.insert(w.out.end(), st.message().begin(), st.message().end());
  w.put_ints(t.ids);
  put_logprobs(&w, t.logprobs);
  w.put(static_cast<std::uint32_t>(t.prompt_logprobs.size()));
  for (const auto& seq : t.prompt_logprobs) put_logprobs(&w, seq);
  return std::move(w.out);
}

Result<SampledTokens> decode_reply(const std::vector<std::uint8_t>& bytes) {
  Reader r{bytes, 0, ok_status()};
  if (r.get<std::uint32_t>() != kReplyMagic && r.err.ok())
    return invalid_argument("step reply: bad magic at byte 0");
  const auto code = r.get<std::uint8_t>();
  if (code > static_cast<std::uint8_t>(StatusCode::kInternal) && r.err.ok())
    return invalid_argument("step reply: unknown status code " + std::to_string(code) +
                            " at byte 4");
  const auto len = r.get<std::uint32_t>();
  if (r.err.ok() && r.off + len > bytes.size())
    return invalid_argument("step reply: message of " + std::to_string(len) + " bytes at byte " +
                            std::to_string(r.off) + " runs past the end");
  std::string message;
  if (r.err.ok()) {
    message.assign(reinterpret_cast<const char*>(bytes.data() + r.off), len);
    r.off += len;
  }
  SampledTokens t;
  t.ids = r.get_ints();
  PRIMA_RETURN_IF_ERROR(get_logprobs(&r, &t.logprobs));
  const auto seqs = r.get<std::uint32_t>();
  if (r.err.ok() && seqs > t.ids.size())
    return invalid_argument("step reply: prompt log-probabilities for " + std::to_string(seqs) +
                            " sequences of " + std::to_string(t.ids.size()) + " at byte " +
                            std::to_string(r.off));
  for (std::uint32_t i = 0; i < seqs && r.err.ok(); ++i)
    PRIMA_RETURN_IF_ERROR(get_logprobs(&r, &t.prompt_logprobs.emplace_back()));
  if (!r.err.ok()) return r.err;
  if (r.off != bytes.size())
    return invalid_argument("step reply: " + std::to_string(bytes.size() - r.off) +
                            " trailing bytes at byte " + std::to_string(r.off));
  if (code != 0) return Status(static_cast<StatusCode>(code), std::move(message));
  return t;
}

}  // namespace prima::real
