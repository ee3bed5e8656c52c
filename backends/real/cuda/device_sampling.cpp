// The device's share of a step's sampling (see device_sampling.h).
#include "backends/real/cuda/device_sampling.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <string>

#include "backends/real/sampler.h"

namespace prima::real::cuda {

namespace p_cuda = ::prima::cuda;

bool device_sampling_enabled() {
  const char* e = std::getenv("PRIMA_DEVICE_SAMPLING");
  return !(e && std::string(e) == "0");
}

bool device_samples(const SamplingParams& p, int vocab) {
  const bool greedy = p.temperature <= 0 || p.top_k == 1;
  return greedy || p.top_k <= 0 || p.top_k >= vocab || p.top_k <= p_cuda::kSampleMaxCandidates;
}

namespace {

int clamp_top(int n) {
  return std::clamp(n, 0, p_cuda::kSampleMaxTop);
}

// The penalties of q's draw, one edit per distinct id in the vocabulary (apply_logit_processing:
// the repetition penalty over the prompt and the output, then frequency x count + presence
// over the output).
void add_edits(const SeqInput& q, int vocab, SamplePlan* plan, p_cuda::SampleRow* row) {
  const SamplingParams& p = q.sampling;
  row->edit_begin = int(plan->edits.size());
  if (!p.penalized()) return;
  std::map<int, p_cuda::SampleEdit> by_id;
  auto in_vocab = [vocab](int id) { return id >= 0 && id < vocab; };
  if (p.repetition_penalty != 1.0)
    for (const std::vector<int>* v : {&q.prompt_history, &q.output_history})
      for (int id : *v)
        if (in_vocab(id)) by_id[id].repeat = 1;
  if (p.frequency_penalty != 0 || p.presence_penalty != 0) {
    std::map<int, int> count;
    for (int id : q.output_history)
      if (in_vocab(id)) ++count[id];
    for (const auto& [id, n] : count)
      by_id[id].subtract =
          static_cast<float>(p.frequency_penalty * static_cast<double>(n) + p.presence_penalty);
  }
  for (auto& [id, e] : by_id) {
    e.id = id;
    plan->edits.push_back(e);
  }
  row->edit_count = int(plan->edits.size()) - row->edit_begin;
}

}  // namespace

SamplePlan plan_sampling(const StepInput& s, int vocab) {
  SamplePlan plan;
  if (!device_sampling_enabled()) return plan;
  int r = 0;
  for (const SeqInput& q : s.seqs) {
    for (int target : q.score_ids) {
      p_cuda::SampleRow row;
      row.row = r++;
      row.kind = p_cuda::kSampleScore;
      row.target = target;
      row.n_top = clamp_top(q.sampling.prompt_logprobs);
      plan.rows.push_back(row);
    }
    if (!q.samples) continue;
    const SamplingParams& p = q.sampling;
    const int at = r++;
    if (!device_samples(p, vocab)) continue;
    p_cuda::SampleRow row;
    row.row = at;
    row.kind = p_cuda::kSampleDraw;
    row.n_top = p.logprobs >= 0 ? clamp_top(p.logprobs) : -1;
    row.top_k = p.top_k > 0 && p.top_k < vocab ? p.top_k : 0;
    row.temperature = p.temperature;
    row.top_p = p.top_p;
    row.min_p = p.min_p;
    row.typical_p = p.typical_p;
    row.repetition = static_cast<float>(p.repetition_penalty);
    const std::int64_t pos = q.pos0 + static_cast<std::int64_t>(q.tokens.size());
    row.u01 = sampling_uniform(p.seed, q.request, pos);
    row.bias_begin = int(plan.biases.size());
    for (const auto& [id, bias] : p.logit_bias) plan.biases.push_back({id, bias});
    row.bias_count = int(plan.biases.size()) - row.bias_begin;
    add_edits(q, vocab, &plan, &row);
    plan.rows.push_back(row);
  }
  return plan;
}

DeviceRow device_row(const p_cuda::SampleRow& row, const p_cuda::SampleOut& out) {
  DeviceRow d;
  if (!out.done) return d;
  d.done = true;
  d.token = out.token;
  if (row.n_top >= 0) {
    d.logprobs.logprob = out.logprob;
    for (int i = 0; i < std::min(out.n_top, p_cuda::kSampleMaxTop); ++i)
      d.logprobs.top.emplace_back(out.top_id[i], out.top_logprob[i]);
  }
  return d;
}

}  // namespace prima::real::cuda
