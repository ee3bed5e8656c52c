// The Llama forward pass against a double-precision reference, and its batch invariances:
// a sequence gets the same greedy tokens alone or in a mixed batch of 8 (prefill chunks and
// decodes, shuffled block tables and order), and chunked prefill equals one-shot prefill.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "kernels/cpu/packed.h"
#include "tests/backends/real/forward_harness.h"
#include "tests/backends/real/model_fixture.h"
#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

using kernels::DType;

// max |a - b| / max |b| over a row.
double rel_err(const float* a, const double* b, int n) {
  double mx = 0, d = 0;
  for (int i = 0; i < n; ++i) {
    mx = std::max(mx, std::abs(b[i]));
    d = std::max(d, std::abs(a[i] - b[i]));
  }
  return d / mx;
}

struct RefCase {
  const char* name;
  DType attn, ffn, embd;
  int kv_heads;
  bool tied;
  double tol;
};

class ForwardVsReference : public ::testing::TestWithParam<RefCase> {};

TEST_P(ForwardVsReference, LogitsOfEveryPositionMatch) {
  const RefCase c = GetParam();
  RandomLlama m;
  m.attn_type = c.attn;
  m.ffn_type = c.ffn;
  m.embd_type = c.embd;
  m.kv_heads = c.kv_heads;
  m.tied = c.tied;
  const std::string path = temp_dir(std::string("fwd_ref_") + c.name) + "/m.gguf";
  write_random_llama(m, path);
  auto model = LoadedModel::open(path);
  ASSERT_TRUE(model);
  std::vector<int> ids = {5, 17, 256, 42, 299, 3, 3, 120, 77, 200, 11, 64, 1, 250, 9, 33, 18};
  const int n = static_cast<int>(ids.size());
  auto ref = reference_logits(*model->file, ids);
  const int V = model->config.vocab;

  // One-shot prefill: the last row.
  real::StepInput s;
  real::SeqInput q;
  q.request = 1;
  q.tokens = ids;
  q.blocks = {7, 3};  // 17 tokens in blocks of 16, out of order
  q.samples = true;
  s.seqs.push_back(q);
  std::vector<float> logits;
  ASSERT_TRUE(model->fwd->forward(s, &logits).ok());
  EXPECT_LT(rel_err(logits.data(), ref.data() + std::size_t(n - 1) * V, V), c.tol);

  // Token by token (decode steps) on other blocks: every position.
  for (int p = 0; p < n; ++p) {
    real::StepInput d;
    real::SeqInput one;
    one.request = 2;
    one.pos0 = p;
    one.tokens = {ids[p]};
    one.blocks = {11, 12};
    one.samples = true;
    d.seqs.push_back(one);
    ASSERT_TRUE(model->fwd->forward(d, &logits).ok());
    EXPECT_LT(rel_err(logits.data(), ref.data() + std::size_t(p) * V, V), c.tol)
        << "position " << p;
  }
}

INSTANTIATE_TEST_SUITE_P(
    Types, ForwardVsReference,
    ::testing::Values(RefCase{"f32", DType::kF32, DType::kF32, DType::kF32, 2, true, 0.01},
                      RefCase{"f32_mha", DType::kF32, DType::kF32, DType::kF32, 4, false, 0.01},
                      RefCase{"q8_q41", DType::kQ8_0, DType::kQ4_1, DType::kQ8_0, 2, true, 0.05},
                      RefCase{"q41_q80", DType::kQ4_1, DType::kQ8_0, DType::kQ4_1, 4, false, 0.05},
                      RefCase{"q40_f16", DType::kQ4_0, DType::kF16, DType::kF16, 2, true, 0.05}),
    [](const auto& info) { return std::string(info.param.name); });

std::vector<int> prompt_of(int len, int salt) {
  std::vector<int> p(len);
  for (int i = 0; i < len; ++i) p[i] = (i * 37 + salt * 101 + 7) % 256;
  return p;
}

class ForwardBatch8 : public ::testing::TestWithParam<bool> {};

// With and without packed weights (--repack; the vocabulary of 300 rows ends in a partial
// panel). Packed, the logits are equal bit for bit.
TEST_P(ForwardBatch8, EightSequencesMixedStepsGiveTheirTokensAlone) {
  const bool repack = GetParam();
  RandomLlama m;
  const std::string path = temp_dir("fwd_batch8") + "/m.gguf";
  write_random_llama(m, path);
  auto model = LoadedModel::open(path, 128, 16, {}, 2, nullptr, repack);
  ASSERT_TRUE(model);
  EXPECT_EQ(model->weights->repacked(), repack && kernels::repack_supported(m.ffn_type));
  const int V = model->config.vocab, kNew = 8;
  const int lens[8] = {1, 3, 5, 9, 17, 20, 33, 40};
  const int chunks[8] = {1 << 30, 2, 4, 1 << 30, 7, 16, 5, 13};
  // Shuffled physical blocks, 4 per sequence (64 tokens).
  std::vector<int> perm(128);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(42));
  std::vector<TestSeq> alone(8), batch(8);
  for (int i = 0; i < 8; ++i) {
    for (auto* s : {&alone[i], &batch[i]}) {
      s->id = 100 + i;
      s->prompt = prompt_of(lens[i], i);
      s->blocks.assign(perm.begin() + 4 * i, perm.begin() + 4 * i + 4);
    }
    batch[i].chunk = chunks[i];
  }
  for (auto& s : alone) run_greedy(*model->fwd, V, {&s}, kNew);
  std::vector<TestSeq*> all;
  for (auto& s : batch) all.push_back(&s);
  run_greedy(*model->fwd, V, all, kNew, /*order_seed=*/7);
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(batch[i].out, alone[i].out) << "sequence " << i;
    // Logits agree to rounding (the matmul kernels may group rows differently by batch size).
    ASSERT_EQ(batch[i].last_logits.size(), alone[i].last_logits.size());
    for (std::size_t j = 0; j < alone[i].last_logits.size(); ++j) {
      if (model->weights->repacked()) {
        ASSERT_EQ(batch[i].last_logits[j], alone[i].last_logits[j])
            << "sequence " << i << " logit " << j;
      }
      ASSERT_NEAR(batch[i].last_logits[j], alone[i].last_logits[j],
                  1e-4 * (1 + std::abs(alone[i].last_logits[j])))
          << "sequence " << i << " logit " << j;
    }
  }
  // The model is not degenerate: sequences do not all produce the same tokens.
  bool differ = false;
  for (int i = 1; i < 8; ++i) differ |= alone[i].out != alone[0].out;
  EXPECT_TRUE(differ);
}

INSTANTIATE_TEST_SUITE_P(Layouts, ForwardBatch8, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "packed" : "gguf"; });

TEST(ForwardBatch, ChunkedPrefillEqualsOneShot) {
  RandomLlama m;
  m.seed = 3;
  const std::string path = temp_dir("fwd_chunked") + "/m.gguf";
  write_random_llama(m, path);
  auto model = LoadedModel::open(path, 64);
  ASSERT_TRUE(model);
  const int V = model->config.vocab;
  for (int chunk : {1, 5, 16, 19}) {
    TestSeq one, chunked;
    for (auto* s : {&one, &chunked}) {
      s->id = 1;
      s->prompt = prompt_of(45, 9);
      s->blocks = {9, 2, 30, 4};
    }
    chunked.blocks = {40, 41, 1, 0};
    chunked.chunk = chunk;
    run_greedy(*model->fwd, V, {&one}, 1);
    const auto first = one.last_logits;
    run_greedy(*model->fwd, V, {&one}, 10);
    run_greedy(*model->fwd, V, {&chunked}, 1);
    ASSERT_EQ(chunked.last_logits.size(), first.size());
    for (int i = 0; i < V; ++i)
      ASSERT_NEAR(chunked.last_logits[i], first[i], 1e-4 * (1 + std::abs(first[i])))
          << "chunk " << chunk << " logit " << i;
    run_greedy(*model->fwd, V, {&chunked}, 10);
    EXPECT_EQ(chunked.out, one.out) << "chunk " << chunk;
  }
}

TEST(ForwardBatch, BadStepInputsAreErrors) {
  RandomLlama m;
  const std::string path = temp_dir("fwd_bad") + "/m.gguf";
  write_random_llama(m, path);
  auto model = LoadedModel::open(path, 8);
  ASSERT_TRUE(model);
  real::StepInput s;
  real::SeqInput q;
  q.tokens = {1, 2, 300};  // 300 == vocab
  q.blocks = {0};
  s.seqs.push_back(q);
  std::vector<float> logits;
  Status st = model->fwd->forward(s, &logits);
  EXPECT_FALSE(st.ok());
  EXPECT_NE(st.message().find("token id 300"), std::string::npos) << st.message();
  s.seqs[0].tokens = std::vector<int>(17, 1);  // needs 2 blocks
  st = model->fwd->forward(s, &logits);
  EXPECT_NE(st.message().find("cannot hold 17 tokens"), std::string::npos) << st.message();
  s.seqs[0].blocks = {0, 8};  // block 8 of 8
  st = model->fwd->forward(s, &logits);
  EXPECT_NE(st.message().find("KV block 8"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace prima::testing
