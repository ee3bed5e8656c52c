// Device check of sample_rows (kernels/cuda/sample.h), planned by device_sampling.h as the GPU
// forward pass plans a step, against the host's sample_row and prompt scoring on the same rows:
// SmolLM2's vocabulary of 49,152, rows of N(0, 3^2) logits (a language model's spread: a top-p
// 0.9 nucleus at temperature 1 fits in the device's 4,096 candidates) and one flat row (whose
// nucleus does not, so the device gives it back). Every mode at three positions (three draws):
// greedy, plain temperature, min-p, top-k, top-k with top-p, top-p alone, logit_bias (an id named
// twice), ties of the largest logit, the three penalties over a history holding the row's likeliest
// ids, log-probabilities, typical sampling (alone, with top-k, penalties and min-p, and a flat row
// whose typical set does not fit, given back), and a scored prompt. The token must be the host's;
// log-probabilities
// within 1e-6 (+1e-6 relative: another summation order of the log-sum-exp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/real/cuda/device_sampling.h"
#include "backends/real/logit_processing.h"
#include "kernels/cuda/sample.h"
#include "tests/gpu/check_support.h"
#include "tests/kernels/cpu/random_data.h"

namespace prima::gpu_checks {

namespace {

using kernels::testing::randn;
namespace rc = real::cuda;

struct Case {
  const char* what;
  SamplingParams p;
  bool history = false;  // penalties over the row's likeliest ids; for greedy: tied maxima
  float spread = 3.0f;
  bool gives_back = false;  // the device leaves the row to the host
};

std::vector<Case> cases() {
  std::vector<Case> c;
  auto add = [&c](const char* what, auto set, bool history = false, float spread = 3.0f,
                  bool gives_back = false) {
    Case k{what, {}, history, spread, gives_back};
    set(k.p);
    c.push_back(k);
  };
  add(
      "greedy with ties", [](SamplingParams&) {}, true);
  add("greedy+bias+logprobs", [](SamplingParams& p) {
    p.logit_bias = {{7, 30.0f}, {9, -2.0f}, {7, 0.5f}};
    p.logprobs = 5;
  });
  add("temperature", [](SamplingParams& p) { p.temperature = 0.8; });
  add("temperature+min_p", [](SamplingParams& p) {
    p.temperature = 0.7;
    p.min_p = 0.05;
    p.logprobs = 0;
  });
  add("top_k", [](SamplingParams& p) {
    p.temperature = 0.9;
    p.top_k = 40;
  });
  add(
      "top_k+top_p+penalties+bias+logprobs",
      [](SamplingParams& p) {
        p.temperature = 1.2;
        p.top_k = 40;
        p.top_p = 0.9;
        p.repetition_penalty = 1.3;
        p.frequency_penalty = 0.4;
        p.presence_penalty = 0.2;
        p.logit_bias = {{11, 1.5f}};
        p.logprobs = 3;
      },
      true);
  add("top_k 4096", [](SamplingParams& p) {
    p.temperature = 1.0;
    p.top_k = 4096;
  });
  add("top_p", [](SamplingParams& p) {
    p.temperature = 1.0;
    p.top_p = 0.9;
  });
  add(
      "top_p+min_p+penalties",
      [](SamplingParams& p) {
        p.temperature = 0.6;
        p.top_p = 0.95;
        p.min_p = 0.02;
        p.repetition_penalty = 0.8;
        p.presence_penalty = -0.5;
      },
      true);
  add("top_k 1 at temperature", [](SamplingParams& p) {
    p.temperature = 0.5;
    p.top_k = 1;
  });
  add("typical", [](SamplingParams& p) {  // a set of about 500-1,500 of the row's ids
    p.temperature = 1.0;
    p.typical_p = 0.7;
  });
  add(
      "typical+top_k+penalties+min_p+logprobs",
      [](SamplingParams& p) {
        p.temperature = 0.8;
        p.typical_p = 0.5;
        p.top_k = 50;
        p.min_p = 0.01;
        p.repetition_penalty = 1.2;
        p.frequency_penalty = 0.3;
        p.logprobs = 2;
      },
      true);
  add(
      "flat typical (given back)",
      [](SamplingParams& p) {
        p.temperature = 1.0;
        p.typical_p = 0.95;
      },
      false, 0.5f, true);
  add(
      "flat top_p (given back)",
      [](SamplingParams& p) {
        p.temperature = 1.0;
        p.top_p = 0.99;
      },
      false, 0.5f, true);
  return c;
}

// The row's `n` likeliest ids, then a few others, some repeated.
std::vector<int> likeliest(const float* row, int V, int n) {
  std::vector<int> id(static_cast<std::size_t>(V));
  std::iota(id.begin(), id.end(), 0);
  std::partial_sort(id.begin(), id.begin() + n, id.end(),
                    [row](int a, int b) { return row[a] > row[b]; });
  id.resize(static_cast<std::size_t>(n));
  return id;
}

bool close(double got, double want) {
  if (std::isinf(want)) return got == want;
  return std::fabs(got - want) <= 1e-6 + 1e-6 * std::fabs(want);
}

constexpr int kPositions = 3;

// The step the check samples: every case at kPositions positions (one row each), then a scored
// prompt of two rows; row_case[r] names row r's case (null: a scored row).
struct CheckStep {
  real::StepInput step;
  std::vector<const Case*> row_case;
  std::vector<float> logits;  // rows x V
};

CheckStep make_step(const std::vector<Case>& cs, int V) {
  CheckStep c;
  for (const Case& k : cs)
    for (int i = 0; i < kPositions; ++i) {
      real::SeqInput q;
      q.request = 1000 + c.row_case.size();
      q.pos0 = 17 + 5 * i;
      q.tokens = {1};
      q.samples = true;
      q.sampling = k.p;
      c.step.seqs.push_back(q);
      c.row_case.push_back(&k);
    }
  real::SeqInput score;  // two scored prompt positions, 4 alternatives each
  score.request = 7;
  score.tokens = {1, 2};
  score.score_ids = {5, 77};
  score.sampling.prompt_logprobs = 4;
  c.step.seqs.push_back(score);
  c.row_case.push_back(nullptr);
  c.row_case.push_back(nullptr);
  const int rows = int(c.row_case.size());
  c.logits.resize(std::size_t(rows) * V);
  for (int r = 0; r < rows; ++r) {
    const Case* k = c.row_case[std::size_t(r)];
    const auto x = randn(V, 500 + r, k ? k->spread : 3.0f);
    std::copy(x.begin(), x.end(), c.logits.begin() + std::ptrdiff_t(r) * V);
    if (!k || !k->history) continue;
    if (k->p.temperature <= 0) {  // three equal maxima, the last id among them: the lowest wins
      for (int id : {V / 2, V / 7, V - 1}) c.logits[std::size_t(r) * V + std::size_t(id)] = 40.0f;
      continue;
    }
    const auto top = likeliest(c.logits.data() + std::size_t(r) * V, V, 6);
    real::SeqInput& q = c.step.seqs[std::size_t(r)];
    q.prompt_history = {top[0], top[3], 42, 43};
    q.output_history = {top[1], top[2], top[1], top[4], 42, top[1]};
  }
  return c;
}

// sample_rows over `plan`; throws (the runners catch it) on a CUDA error or when the kernel
// changed the logits (a given-back row is sampled from them).
std::vector<cuda::SampleOut> run_device(const rc::SamplePlan& plan,
                                        const std::vector<float>& logits, int V) {
  const int m = int(plan.rows.size());
  DeviceBuffer dl(logits), dr(plan.rows),
      db(plan.biases.empty() ? std::vector<cuda::SampleBias>(1) : plan.biases),
      de(plan.edits.empty() ? std::vector<cuda::SampleEdit>(1) : plan.edits),
      dw(std::size_t(m) * V * sizeof(float)),
      dscr(std::size_t(m) * cuda::kSampleMaxCandidates * sizeof(double)),
      dout(std::size_t(m) * sizeof(cuda::SampleOut));
  finish(cuda::sample_rows(dl.as<float>(), V, dr.as<cuda::SampleRow>(), m,
                           db.as<cuda::SampleBias>(), de.as<cuda::SampleEdit>(), dw.as<float>(),
                           dscr.as<double>(), dout.as<cuda::SampleOut>(), nullptr),
         "sample_rows");
  if (dl.read<float>(logits.size()) != logits)
    throw std::runtime_error("sample_rows changed the logits");
  return dout.read<cuda::SampleOut>(std::size_t(m));
}

// Each device answer against the host's sample_row or prompt scoring of the same row.
void compare_rows(const CheckStep& c, const rc::SamplePlan& plan,
                  const std::vector<cuda::SampleOut>& outs, int V, CheckResult* res) {
  auto fail = [res](const std::string& why) {
    if (res->ok) res->detail += ": " + why;
    res->ok = false;
    res->max_err = 1e9;
  };
  auto cmp_lp = [&](const TokenLogprobs& want, const cuda::SampleOut& o, const std::string& at) {
    if (!close(o.logprob, want.logprob))
      fail(at + " logprob " + std::to_string(o.logprob) + ", host " + std::to_string(want.logprob));
    if (o.n_top != int(want.top.size())) return fail(at + " top count");
    for (int i = 0; i < o.n_top; ++i) {
      if (o.top_id[i] != want.top[std::size_t(i)].first)
        fail(at + " top id " + std::to_string(i) + " " + std::to_string(o.top_id[i]) + ", host " +
             std::to_string(want.top[std::size_t(i)].first));
      if (!close(o.top_logprob[i], want.top[std::size_t(i)].second)) fail(at + " top logprob");
      const double e = std::fabs(double(o.top_logprob[i]) - want.top[std::size_t(i)].second);
      res->max_err =
          std::max(res->max_err, e / (1e-6 + 1e-6 * std::fabs(want.top[std::size_t(i)].second)));
    }
  };
  real::SampleScratch scratch;
  for (std::size_t i = 0; i < plan.rows.size(); ++i) {
    const cuda::SampleRow& pr = plan.rows[i];
    const cuda::SampleOut& o = outs[i];
    std::vector<float> row(c.logits.begin() + std::ptrdiff_t(pr.row) * V,
                           c.logits.begin() + std::ptrdiff_t(pr.row + 1) * V);
    const Case* k = c.row_case[std::size_t(pr.row)];
    const std::string at = std::string(k ? k->what : "score") + " row " + std::to_string(pr.row);
    if (!k) {
      TokenLogprobs want;
      const double lse = real::log_sum_exp(row.data(), V);
      want.logprob = float(double(row[std::size_t(pr.target)]) - lse);
      want.top = real::top_logprobs(row.data(), V, 4, lse, &scratch.pairs);
      if (!o.done) fail(at + " not done");
      cmp_lp(want, o, at);
      continue;
    }
    if (k->gives_back && V > cuda::kSampleMaxCandidates) {
      if (o.done) fail(at + ": done, expected to be given back");
      continue;
    }
    if (!o.done) {
      fail(at + " given back");
      continue;
    }
    const real::SeqInput& q = c.step.seqs[std::size_t(pr.row)];
    TokenLogprobs want;
    const int tok =
        real::sample_row(row.data(), V, q.sampling, {&q.prompt_history, &q.output_history},
                         q.request, q.pos0 + 1, &scratch, &want);
    if (o.token != tok)
      fail(at + " drew " + std::to_string(o.token) + ", host " + std::to_string(tok));
    if (q.sampling.logprobs >= 0) cmp_lp(want, o, at);
  }
}

CheckResult sample_rows(int V) {
  const std::vector<Case> cs = cases();
  const CheckStep c = make_step(cs, V);
  const rc::SamplePlan plan = rc::plan_sampling(c.step, V);
  if (plan.rows.size() != c.row_case.size())
    return {
        false, 1e9,
        "planned " + std::to_string(plan.rows.size()) + " of " + std::to_string(c.row_case.size())};
  const auto outs = run_device(plan, c.logits, V);
  CheckResult res{true, 0,
                  "sample_rows: " + std::to_string(cs.size()) + " modes x " +
                      std::to_string(kPositions) + " draws + 2 scored rows over " +
                      std::to_string(V)};
  compare_rows(c, plan, outs, V, &res);
  return res;
}

}  // namespace

void add_sample_checks(std::vector<Check>* out) {
  out->push_back({"sample_rows", [] { return sample_rows(49152); }});
  out->push_back({"sample_rows_small_vocab", [] { return sample_rows(509); }});
}

}  // namespace prima::gpu_checks
