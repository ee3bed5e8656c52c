// Catalog figures against published parameter counts and KV sizes; quantization; parse_model.
#include "engine/model/model_spec.h"

#include <gtest/gtest.h>

namespace prima::model {
namespace {

ModelSpec get(const std::string& name) {
  auto m = model_by_name(name);
  EXPECT_TRUE(m.ok()) << m.status().message();
  return *m;
}

void expect_within(double got, double want, double rel, const std::string& what) {
  EXPECT_NEAR(got / want, 1.0, rel) << what << ": got " << got << ", published " << want;
}

TEST(ModelCatalog, ParameterCountsMatchPublishedFigures) {
  expect_within(get("llama-2-7b").total_params(), 6.74e9, 0.02, "Llama-2-7B");
  expect_within(get("llama-2-13b").total_params(), 13.0e9, 0.02, "Llama-2-13B");
  expect_within(get("llama-2-70b").total_params(), 69.0e9, 0.02, "Llama-2-70B");
  expect_within(get("llama-3-8b").total_params(), 8.03e9, 0.02, "Llama-3-8B");
  expect_within(get("llama-3-70b").total_params(), 70.6e9, 0.02, "Llama-3-70B");
  expect_within(get("smollm2-135m").total_params(), 135e6, 0.02, "SmolLM2-135M");
  expect_within(get("mixtral-8x7b").total_params(), 46.7e9, 0.02, "Mixtral total");
  expect_within(get("mixtral-8x7b").active_params(), 12.9e9, 0.02, "Mixtral active");
  expect_within(get("moe-1t").total_params(), 1.04e12, 0.02, "MoE-1T total");
  expect_within(get("moe-1t").active_params(), 32.6e9, 0.03, "MoE-1T active");
  expect_within(get("mixtral-8x22b").total_params(), 140.6e9, 0.02, "Mixtral-8x22B total");
  expect_within(get("mixtral-8x22b").active_params(), 39.1e9, 0.02, "Mixtral-8x22B active");
  expect_within(get("deepseek-v3").total_params(), 671e9, 0.02, "DeepSeek-V3 total");
  expect_within(get("deepseek-v3").active_params(), 37e9, 0.03, "DeepSeek-V3 active");
  expect_within(get("qwen3-235b-a22b").total_params(), 235e9, 0.02, "Qwen3-235B total");
  expect_within(get("qwen3-235b-a22b").active_params(), 22e9, 0.03, "Qwen3-235B active");
}

TEST(ModelCatalog, DenseModelsActiveEqualsTotal) {
  const ModelSpec m = get("llama-2-7b");
  EXPECT_DOUBLE_EQ(m.active_params(), m.total_params());
  // Hand count: 32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096) + 2 x 32000 x 4096 + 4096.
  const double layer = 4.0 * 4096 * 4096 + 3.0 * 4096 * 11008 + 2.0 * 4096;
  EXPECT_DOUBLE_EQ(m.total_params(), 32 * layer + 2.0 * 32000 * 4096 + 4096);
}

TEST(ModelCatalog, ForwardFlopsByHand) {
  const ModelSpec m = get("llama-2-7b");
  // Per token: 2 x (4 x 4096^2 + 3 x 4096 x 11008) per layer, 32 layers.
  const double per_token = 32 * 2 * (4.0 * 4096 * 4096 + 3.0 * 4096 * 11008);
  // A prefill of 3 tokens attends to 1 + 2 + 3 = 6 pairs; 4 x 32 heads x 128 per pair.
  const double attn = 4.0 * 32 * 128 * 6 * 32;
  const double head = 2.0 * 4096 * 32000;
  EXPECT_DOUBLE_EQ(m.forward_flops(3, 3, true), 3 * per_token + attn + head);
  EXPECT_DOUBLE_EQ(m.forward_flops(3, 3, false), 3 * per_token + attn);
  // One decode token at position 99 attends to 100 positions.
  EXPECT_DOUBLE_EQ(m.forward_flops(1, 100, true), per_token + 4.0 * 32 * 128 * 100 * 32 + head);
}

TEST(ModelCatalog, KvBytesPerTokenFp16) {
  EXPECT_DOUBLE_EQ(get("llama-2-7b").kv_bytes_per_token(), 512 * 1024.0);
  EXPECT_DOUBLE_EQ(get("llama-2-13b").kv_bytes_per_token(), 800 * 1024.0);
  EXPECT_DOUBLE_EQ(get("llama-2-70b").kv_bytes_per_token(), 320 * 1024.0);
  EXPECT_DOUBLE_EQ(get("llama-3-8b").kv_bytes_per_token(), 128 * 1024.0);
  // MLA: 61 layers x (512 latent + 64 rope) x 2 bytes.
  EXPECT_DOUBLE_EQ(get("moe-1t").kv_bytes_per_token(), 61 * 576 * 2.0);
  EXPECT_DOUBLE_EQ(get("llama-2-7b").kv_bytes_per_token(1), 256 * 1024.0);
}

TEST(ModelCatalog, NamesAreCaseInsensitiveAndAllValid) {
  EXPECT_EQ(get("Llama-2-70B").name, "Llama-2-70B");
  for (const auto& n : model_names()) {
    const ModelSpec m = get(n);
    EXPECT_TRUE(m.validate().ok()) << n << ": " << m.validate().message();
    EXPECT_FALSE(m.source.empty()) << n;
  }
  auto bad = model_by_name("gpt-5");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("llama-2-7b"), std::string::npos);
}

TEST(Quantization, BytesAndNames) {
  EXPECT_DOUBLE_EQ(weight_bytes_per_param(Quantization::kFP16), 2);
  EXPECT_DOUBLE_EQ(weight_bytes_per_param(Quantization::kBF16), 2);
  EXPECT_DOUBLE_EQ(weight_bytes_per_param(Quantization::kW8A8), 1);
  EXPECT_DOUBLE_EQ(weight_bytes_per_param(Quantization::kW4A16), 0.5 + 4.0 / 128);
  EXPECT_DOUBLE_EQ(gemm_activation_bytes(Quantization::kW8A8), 1);
  EXPECT_DOUBLE_EQ(gemm_activation_bytes(Quantization::kW4A16), 2);
  for (const auto& n : quantization_names()) {
    Quantization q;
    ASSERT_TRUE(parse_quantization(n, &q));
    EXPECT_EQ(n, quantization_name(q));
  }
  Quantization q;
  EXPECT_TRUE(parse_quantization("W4A16", &q));
  EXPECT_EQ(q, Quantization::kW4A16);
  EXPECT_FALSE(parse_quantization("int3", &q));
}

TEST(Quantization, ModelWeightBytesKeepEmbeddings16Bit) {
  const ModelSpec m = get("llama-2-7b");
  const double emb = 2 * 32000.0 * 4096 + 4096;
  EXPECT_DOUBLE_EQ(model_weight_bytes(m, Quantization::kFP16), 2 * m.total_params());
  EXPECT_DOUBLE_EQ(model_weight_bytes(m, Quantization::kW8A8),
                   (m.total_params() - emb) * 1 + emb * 2);
}

TEST(ParseModel, NameOrObjectWithBase) {
  config::Json j = config::Json::parse(R"({
    "a": "llama-3-8b",
    "b": {"base": "llama-2-7b", "name": "tiny", "layers": 2},
    "c": {"name": "toy", "layers": 2, "hidden": 64, "heads": 4, "ffn": 128, "vocab": 100}
  })");
  config::JsonReader r(j, "s.json");
  EXPECT_EQ(parse_model(r, "a").name, "Llama-3-8B");
  const ModelSpec b = parse_model(r, "b");
  EXPECT_EQ(b.name, "tiny");
  EXPECT_EQ(b.layers, 2);
  EXPECT_EQ(b.hidden, 4096);
  const ModelSpec c = parse_model(r, "c");
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_EQ(c.kv_heads, 4);
  r.finish();
}

TEST(ParseModel, ErrorsNamePathAndChoices) {
  config::Json j = config::Json::parse(
      R"({"a": "llama-9", "b": {"base": "llama-2-7b", "layerz": 3}, "c": {"base": "llama-2-7b", "heads": 31}})");
  config::JsonReader r(j, "s.json");
  try {
    parse_model(r, "a");
    FAIL();
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("s.json: /a: unknown model \"llama-9\""),
              std::string::npos)
        << e.what();
  }
  try {
    parse_model(r, "b");
    FAIL();
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("/b/layerz: unknown field"), std::string::npos)
        << e.what();
  }
  try {
    parse_model(r, "c");
    FAIL();
  } catch (const config::ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("multiple of kv_heads"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace prima::model
