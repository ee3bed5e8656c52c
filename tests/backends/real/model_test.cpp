// Llama config and weight binding: metadata read from the file, tied/untied LM head, and the
// errors for another architecture, a missing tensor, a wrong shape and a TP degree that does
// not divide the heads or splits a quantization block. Step codec round trip.
#include <gtest/gtest.h>

#include "backends/real/llama_weights.h"
#include "backends/real/rank_runner.h"
#include "backends/real/step_codec.h"
#include "tests/backends/real/model_fixture.h"
#include "tests/support/run_prima.h"

namespace prima::real {
namespace {

using testing::RandomLlama;

std::unique_ptr<GgufFile> write_and_open(const RandomLlama& m, const std::string& name) {
  const std::string path = prima::testing::temp_dir(name) + "/m.gguf";
  testing::write_random_llama(m, path);
  auto f = GgufFile::open(path, {"none"});
  EXPECT_TRUE(f.ok()) << f.status().message();
  return f.ok() ? std::move(*f) : nullptr;
}

TEST(LlamaConfig, ReadsTheMetadata) {
  RandomLlama m;
  m.tied = false;
  auto f = write_and_open(m, "cfg_read");
  ASSERT_TRUE(f);
  auto c = read_llama_config(*f);
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ(c->layers, 2);
  EXPECT_EQ(c->hidden, 128);
  EXPECT_EQ(c->heads, 4);
  EXPECT_EQ(c->kv_heads, 2);
  EXPECT_EQ(c->head_dim, 32);
  EXPECT_EQ(c->ffn, 256);
  EXPECT_EQ(c->vocab, 300);
  EXPECT_EQ(c->context_length, 256);
  EXPECT_FALSE(c->tied_embeddings);
  auto w = LlamaWeights::bind(*f, *c, {});
  ASSERT_TRUE(w.ok()) << w.status().message();
  EXPECT_EQ((*w)->num_layers(), 2);
  EXPECT_EQ((*w)->output().data, f->tensor("output.weight")->data);
}

TEST(LlamaConfig, TiedEmbeddingsUseTokenEmbd) {
  RandomLlama m;
  auto f = write_and_open(m, "cfg_tied");
  ASSERT_TRUE(f);
  auto c = read_llama_config(*f);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->tied_embeddings);
  auto w = LlamaWeights::bind(*f, *c, {});
  ASSERT_TRUE(w.ok());
  EXPECT_EQ((*w)->output().data, f->tensor("token_embd.weight")->data);
}

TEST(LlamaConfig, OtherArchitectureIsNamed) {
  RandomLlama m;
  m.arch = "qwen2";
  auto f = write_and_open(m, "cfg_arch");
  ASSERT_TRUE(f);
  auto c = read_llama_config(*f);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("unsupported architecture 'qwen2'"), std::string::npos)
      << c.status().message();
}

TEST(LlamaWeights, MissingTensorIsNamed) {
  RandomLlama m;
  m.skip_tensor_ffn_up1 = true;
  auto f = write_and_open(m, "w_missing");
  ASSERT_TRUE(f);
  auto c = read_llama_config(*f);
  ASSERT_TRUE(c.ok());
  auto w = LlamaWeights::bind(*f, *c, {});
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("missing tensor blk.1.ffn_up.weight"), std::string::npos)
      << w.status().message();
  // A shard holding only layer 0 does not need it.
  ShardSpec s;
  s.layer_begin = 0;
  s.layer_end = 1;
  EXPECT_TRUE(LlamaWeights::bind(*f, *c, s).ok());
}

TEST(LlamaWeights, WrongShapeIsNamed) {
  RandomLlama m;
  auto f = write_and_open(m, "w_shape");
  ASSERT_TRUE(f);
  auto c = read_llama_config(*f);
  ASSERT_TRUE(c.ok());
  c->ffn = 512;  // the metadata says 512, the tensors have 256
  auto w = LlamaWeights::bind(*f, *c, {});
  ASSERT_FALSE(w.ok());
  EXPECT_NE(w.status().message().find("blk.0.ffn_gate.weight has shape [128, 256], expected "
                                      "[128, 512]"),
            std::string::npos)
      << w.status().message();
}

TEST(LlamaWeights, TpMustDivideHeadsAndKvHeads) {
  RandomLlama m;  // 4 heads, 2 kv heads, ffn 256
  auto f = write_and_open(m, "w_tp");
  ASSERT_TRUE(f);
  auto c = read_llama_config(*f);
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(check_tp(*c, *f, 2).ok());
  Status st = check_tp(*c, *f, 3);
  EXPECT_NE(st.message().find("--tp 3 does not divide the model's attention heads (4)"),
            std::string::npos)
      << st.message();
  st = check_tp(*c, *f, 4);  // 4 heads but 2 KV heads
  EXPECT_NE(st.message().find("KV heads (2)"), std::string::npos) << st.message();

  st = check_tp(*c, *f, 0);
  EXPECT_FALSE(st.ok());
}

TEST(LlamaWeights, TpShardsAreSlicesOfTheFullMatrices) {
  RandomLlama m;
  auto f = write_and_open(m, "w_slices");
  ASSERT_TRUE(f);
  auto c = read_llama_config(*f);
  ASSERT_TRUE(c.ok());
  ShardSpec s;
  s.tp = 2;
  s.tp_rank = 1;
  auto w = LlamaWeights::bind(*f, *c, s);
  ASSERT_TRUE(w.ok()) << w.status().message();
  const auto& L = (*w)->layer(0);
  EXPECT_EQ(L.wq.rows, 64);
  EXPECT_EQ(L.wk.rows, 32);
  EXPECT_EQ(L.wo.rows, 64);
  EXPECT_EQ(L.wo.cols, 128);
  EXPECT_EQ(L.down.rows, 64);
  EXPECT_EQ(L.down.cols, 256);
  // Row 5 of rank 1's ffn_down slice = row 64 + 5 of the full matrix.
  const auto full = testing::dequant(*f->tensor("blk.0.ffn_down.weight"));
  std::vector<float> row(256);
  kernels::dequantize_row(
      L.down.type,
      static_cast<const std::uint8_t*>(L.down.data) + 5 * kernels::row_bytes(L.down.type, 256),
      row.data(), 256);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(row[i], full[(64 + 5) * 256 + i]);
}

TEST(StageLayers, SplitsEvenlyEarlierStagesTakeTheRemainder) {
  EXPECT_EQ(stage_layers(30, 2, 0), std::make_pair(0, 15));
  EXPECT_EQ(stage_layers(30, 2, 1), std::make_pair(15, 30));
  EXPECT_EQ(stage_layers(5, 3, 0), std::make_pair(0, 2));
  EXPECT_EQ(stage_layers(5, 3, 1), std::make_pair(2, 4));
  EXPECT_EQ(stage_layers(5, 3, 2), std::make_pair(4, 5));
}

TEST(StepCodec, RoundTripAndTruncation) {
  StepInput s;
  s.step_id = 42;
  SeqInput a;
  a.request = 7;
  a.pos0 = 16;
  a.tokens = {1, 2, 3};
  a.blocks = {9, 4};
  a.samples = true;
  a.sampling.temperature = 0.7;
  a.sampling.top_k = 40;
  a.sampling.top_p = 0.9;
  a.sampling.seed = 123;
  s.seqs.push_back(a);
  s.seqs.push_back(SeqInput{8, 0, {5}, {1}, false, {}});
  auto bytes = encode_step(s);
  auto d = decode_step(bytes);
  ASSERT_TRUE(d.ok()) << d.status().message();
  EXPECT_EQ(d->step_id, 42u);
  ASSERT_EQ(d->seqs.size(), 2u);
  EXPECT_EQ(d->seqs[0].tokens, a.tokens);
  EXPECT_EQ(d->seqs[0].blocks, a.blocks);
  EXPECT_EQ(d->seqs[0].pos0, 16);
  EXPECT_TRUE(d->seqs[0].samples);
  EXPECT_EQ(d->seqs[0].sampling.top_k, 40);
  EXPECT_EQ(d->seqs[0].sampling.seed, 123u);
  EXPECT_FALSE(d->seqs[1].samples);
  bytes.resize(bytes.size() - 3);
  auto bad = decode_step(bytes);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("step message"), std::string::npos);
}

}  // namespace
}  // namespace prima::real
