// Logit bias, penalties and raw log-probabilities (see logit_processing.h).
#include "backends/real/logit_processing.h"

#include <algorithm>
#include <cmath>

#include "backends/real/sampler.h"

namespace prima::real {

void apply_logit_processing(float* logits, int vocab, const SamplingParams& p,
                            const TokenHistory& h, std::vector<int>* scratch) {
  for (const auto& [id, bias] : p.logit_bias)
    if (id >= 0 && id < vocab) logits[id] += bias;
  if (!p.penalized()) return;
  auto& ids = *scratch;
  // Repetition: once per distinct token of the prompt and the output (vLLM's mask).
  if (p.repetition_penalty != 1.0) {
    ids.clear();
    if (h.prompt) ids.insert(ids.end(), h.prompt->begin(), h.prompt->end());
    if (h.output) ids.insert(ids.end(), h.output->begin(), h.output->end());
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    const float r = static_cast<float>(p.repetition_penalty);
    for (int id : ids) {
      if (id < 0 || id >= vocab) continue;
      float& l = logits[id];
      l = l > 0 ? l / r : l * r;
    }
  }
  // Frequency (per occurrence) and presence (once) over the output only.
  if ((p.frequency_penalty != 0 || p.presence_penalty != 0) && h.output) {
    ids.assign(h.output->begin(), h.output->end());
    std::sort(ids.begin(), ids.end());
    for (std::size_t i = 0; i < ids.size();) {
      std::size_t j = i;
      while (j < ids.size() && ids[j] == ids[i]) ++j;
      const int id = ids[i];
      if (id >= 0 && id < vocab)
        logits[id] -= static_cast<float>(p.frequency_penalty * static_cast<double>(j - i) +
                                         p.presence_penalty);
      i = j;
    }
  }
}

void apply_typical(float* logits, int vocab, double temperature, double typical_p,
                   std::vector<std::pair<float, int>>* scratch) {
  if (!(typical_p < 1.0) || !(temperature > 0) || vocab <= 1) return;
  // Log-probabilities at the temperature, the entropy, then the tokens by |surprisal -
  // entropy| ascending; the first ones whose mass stays below typical_p, plus the one that
  // reaches it, are kept (HF: last_ind = count(cumulative < mass), keep [0, last_ind]).
  float mx = -INFINITY;
  for (int i = 0; i < vocab; ++i)
    if (logits[i] > mx) mx = logits[i];
  if (!std::isfinite(mx)) return;
  double sum = 0;
  for (int i = 0; i < vocab; ++i)
    if (std::isfinite(logits[i]))
      sum += std::exp((static_cast<double>(logits[i]) - mx) / temperature);
  const double lse = std::log(sum);
  auto logp = [&](int i) { return (static_cast<double>(logits[i]) - mx) / temperature - lse; };
  double entropy = 0;
  for (int i = 0; i < vocab; ++i)
    if (std::isfinite(logits[i])) entropy -= std::exp(logp(i)) * logp(i);
  auto& c = *scratch;
  c.clear();
  for (int i = 0; i < vocab; ++i)
    if (std::isfinite(logits[i]))
      c.emplace_back(static_cast<float>(std::fabs(-logp(i) - entropy)), i);
  std::sort(c.begin(), c.end());  // by deviation, then id
  double cum = 0;
  std::size_t keep = 0;  // count(cumulative < typical_p)
  for (; keep < c.size(); ++keep) {
    cum += std::exp(logp(c[keep].second));
    if (!(cum < typical_p)) break;
  }
  keep = std::min(keep + 1, c.size());
  for (std::size_t k = keep; k < c.size(); ++k) logits[c[k].second] = -INFINITY;
}

void apply_min_p(float* logits, int vocab, double temperature, double min_p) {
  if (!(min_p > 0) || !(temperature > 0) || vocab <= 1) return;
  float mx = -INFINITY;
  for (int i = 0; i < vocab; ++i)
    if (logits[i] > mx) mx = logits[i];
  if (!std::isfinite(mx)) return;
  // p_i / p_max = exp((l_i - mx) / T) < min_p  <=>  l_i < mx + T ln(min_p)
  const double cut = static_cast<double>(mx) + temperature * std::log(min_p);
  for (int i = 0; i < vocab; ++i)
    if (static_cast<double>(logits[i]) < cut) logits[i] = -INFINITY;
}

double log_sum_exp(const float* logits, int vocab) {
  float mx = -INFINITY;
  for (int i = 0; i < vocab; ++i)
    if (logits[i] > mx) mx = logits[i];
  if (!std::isfinite(mx)) return mx;
  double sum = 0;
  for (int i = 0; i < vocab; ++i)
    if (std::isfinite(logits[i])) sum += std::exp(static_cast<double>(logits[i]) - mx);
  return mx + std::log(sum);
}

std::vector<std::pair<int, float>> top_logprobs(const float* logits, int vocab, int n, double lse,
                                                std::vector<std::pair<float, int>>* scratch) {
  n = std::clamp(n, 0, vocab);
  std::vector<std::pair<int, float>> out;
  if (n == 0) return out;
  auto& c = *scratch;
  c.resize(vocab);
  for (int i = 0; i < vocab; ++i) c[i] = {std::isnan(logits[i]) ? -INFINITY : logits[i], i};
  std::partial_sort(c.begin(), c.begin() + n, c.end(), [](const auto& a, const auto& b) {
    return a.first > b.first || (a.first == b.first && a.second < b.second);
  });
  out.reserve(n);
  for (int i = 0; i < n; ++i)
    out.emplace_back(c[i].second, static_cast<float>(static_cast<double>(c[i].first) - lse));
  return out;
}

int sample_row(float* logits, int vocab, const SamplingParams& p, const TokenHistory& h,
               std::uint64_t request, std::int64_t position, SampleScratch* scratch,
               TokenLogprobs* lp) {
  const bool want_lp = p.logprobs >= 0 && lp;
  const bool process = !p.logit_bias.empty() || p.penalized() || p.typical_p < 1.0 || p.min_p > 0;
  double lse = 0;
  // The raw logits the processing changes, to report the sampled token's raw logprob.
  std::vector<std::pair<int, float>> raw;
  if (want_lp) {
    lse = log_sum_exp(logits, vocab);
    lp->top = top_logprobs(logits, vocab, std::min(p.logprobs, SamplingParams::kMaxTopLogprobs),
                           lse, &scratch->pairs);
  }
  if (process) {
    if (want_lp) {
      // Every id the processing may touch (bias ids, the history): a copy of its raw logit.
      for (const auto& b : p.logit_bias)
        if (b.first >= 0 && b.first < vocab) raw.emplace_back(b.first, logits[b.first]);
      for (const std::vector<int>* v : {h.prompt, h.output})
        if (v && p.penalized())
          for (int id : *v)
            if (id >= 0 && id < vocab) raw.emplace_back(id, logits[id]);
    }
    apply_logit_processing(logits, vocab, p, h, &scratch->ids);
    apply_typical(logits, vocab, p.temperature, p.typical_p, &scratch->pairs);
    apply_min_p(logits, vocab, p.temperature, p.min_p);
  }
  const int tok = sample_token(logits, vocab, p, request, position, &scratch->pairs);
  if (want_lp) {
    float x = logits[tok];
    for (const auto& [id, v] : raw)
      if (id == tok) {
        x = v;
        break;
      }
    lp->logprob = static_cast<float>(static_cast<double>(x) - lse);
  }
  return tok;
}

}  // namespace prima::real
