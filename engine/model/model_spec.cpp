// Quantization formats and parameter / KV accounting of ModelSpec (see model_spec.h).
#include "engine/model/model_spec.h"

#include <algorithm>
#include <cctype>

namespace prima::model {

const char* quantization_name(Quantization q) {
  switch (q) {
    case Quantization::kFP16:
      return "fp16";
    case Quantization::kBF16:
      return "bf16";
    case Quantization::kW8A8:
      return "w8a8";
    case Quantization::kW4A16:
      return "w4a16";
    case Quantization::kFP8:
      return "fp8";
  }
  return "?";
}

bool parse_quantization(const std::string& s, Quantization* out) {
  std::string l = s;
  for (auto& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  for (Quantization q : {Quantization::kFP16, Quantization::kBF16, Quantization::kW8A8,
                         Quantization::kW4A16, Quantization::kFP8}) {
    if (l == quantization_name(q)) {
      *out = q;
      return true;
    }
  }
  return false;
}

std::vector<std::string> quantization_names() {
  return {"fp16", "bf16", "w8a8", "w4a16", "fp8"};
}

double weight_bytes_per_param(Quantization q) {
  switch (q) {
    case Quantization::kFP16:
    case Quantization::kBF16:
      return 2;
    case Quantization::kW8A8:
      // int8 weights; per-output-channel fp16 scales add 2 bytes per row of `hidden` or more
      // elements (< 0.1%), ignored.
      return 1;
    case Quantization::kW4A16:
      // 4-bit weights + one fp16 scale and one fp16 zero point per group of 128: 0.5 + 4/128.
      return 0.5 + 4.0 / 128.0;
    case Quantization::kFP8:
      // E4M3 weights with a per-tensor (or per-channel) scale: 1 byte per weight.
      return 1;
  }
  return 2;
}

double gemm_activation_bytes(Quantization q) {
  return q == Quantization::kW8A8 || q == Quantization::kFP8 ? 1 : 2;
}

double ModelSpec::qkv_params_per_layer() const {
  const double h = hidden;
  if (kv_lora_rank > 0) {
    // MLA (DeepSeek-V3 / Kimi-K2 layout): q_a [h x q_lora] + q_b [q_lora x heads*(nope+rope)]
    // (or q [h x heads*(nope+rope)] without q_lora), kv_a [h x (kv_lora + rope)],
    // kv_b [kv_lora x heads*(nope + v)], with nope = v = head_dim.
    const double q_out = static_cast<double>(heads) * (head_dim + rope_dim);
    const double q = q_lora_rank > 0 ? h * q_lora_rank + q_lora_rank * q_out : h * q_out;
    const double kv_a = h * (kv_lora_rank + rope_dim);
    const double kv_b = static_cast<double>(kv_lora_rank) * heads * (2.0 * head_dim);
    return q + kv_a + kv_b;
  }
  return h * (static_cast<double>(heads) + 2.0 * kv_heads) * head_dim;
}

double ModelSpec::attention_out_params_per_layer() const {
  return static_cast<double>(heads) * head_dim * hidden;
}

double ModelSpec::attention_params_per_layer() const {
  // Two RMSNorm vectors per layer; MLA adds its q_a and kv_a norms.
  const double norms = 2.0 * hidden + (kv_lora_rank > 0 ? q_lora_rank + kv_lora_rank : 0);
  return qkv_params_per_layer() + attention_out_params_per_layer() + norms;
}

double ModelSpec::expert_params() const {
  return 3.0 * hidden * expert_ffn;
}

double ModelSpec::ffn_params_per_layer(int layer) const {
  if (is_dense_layer(layer)) return double(ffn_matrices) * hidden * ffn;
  const double router = static_cast<double>(hidden) * experts;
  return (experts + shared_experts) * expert_params() + router;
}

double ModelSpec::active_ffn_params_per_layer(int layer) const {
  if (is_dense_layer(layer)) return double(ffn_matrices) * hidden * ffn;
  const double router = static_cast<double>(hidden) * experts;
  return (experts_per_token + shared_experts) * expert_params() + router;
}

double ModelSpec::layer_params(int layer) const {
  return attention_params_per_layer() + ffn_params_per_layer(layer);
}

double ModelSpec::embedding_params() const {
  return static_cast<double>(vocab) * hidden;
}

double ModelSpec::lm_head_params() const {
  return tied_embeddings ? 0 : static_cast<double>(vocab) * hidden;
}

double ModelSpec::total_params() const {
  double p = embedding_params() + lm_head_params() + hidden;  // + final norm
  for (int l = 0; l < layers; ++l) p += layer_params(l);
  return p;
}

double ModelSpec::active_params() const {
  double p = embedding_params() + lm_head_params() + hidden;
  for (int l = 0; l < layers; ++l)
    p += attention_params_per_layer() + active_ffn_params_per_layer(l);
  return p;
}

double ModelSpec::forward_flops(int new_tokens, int context_len, bool samples) const {
  const double t = new_tokens, p0 = static_cast<double>(context_len) - new_tokens;
  double per_token = 0;
  for (int l = 0; l < layers; ++l)
    per_token +=
        qkv_params_per_layer() + attention_out_params_per_layer() + active_ffn_params_per_layer(l);
  const double pairs = t * p0 + t * (t + 1) / 2;  // token i attends to positions 0..i
  double f = 2 * t * per_token + 4.0 * heads * head_dim * pairs * layers;
  if (samples) f += 2.0 * hidden * vocab;
  return f;
}

double ModelSpec::kv_elements_per_token_per_layer() const {
  if (kv_lora_rank > 0) return static_cast<double>(kv_lora_rank) + rope_dim;
  return 2.0 * kv_heads * head_dim;
}

double ModelSpec::kv_bytes_per_token(double kv_bytes) const {
  return kv_elements_per_token_per_layer() * layers * kv_bytes;
}

Status ModelSpec::validate() const {
  const std::string where = "model " + (name.empty() ? std::string("(unnamed)") : name) + ": ";
  auto positive = [&](const char* field, int v) -> Status {
    if (v <= 0)
      return invalid_argument(where + field + " must be a positive integer, got " +
                              std::to_string(v));
    return ok_status();
  };
  PRIMA_RETURN_IF_ERROR(positive("layers", layers));
  PRIMA_RETURN_IF_ERROR(positive("hidden", hidden));
  PRIMA_RETURN_IF_ERROR(positive("heads", heads));
  PRIMA_RETURN_IF_ERROR(positive("kv_heads", kv_heads));
  PRIMA_RETURN_IF_ERROR(positive("head_dim", head_dim));
  PRIMA_RETURN_IF_ERROR(positive("vocab", vocab));
  PRIMA_RETURN_IF_ERROR(positive("max_context", max_context));
  if (heads % kv_heads != 0)
    return invalid_argument(where + "heads (" + std::to_string(heads) +
                            ") must be a multiple of kv_heads (" + std::to_string(kv_heads) + ")");
  if (kv_lora_rank < 0 || rope_dim < 0 || q_lora_rank < 0)
    return invalid_argument(where + "kv_lora_rank, q_lora_rank and rope_dim must be >= 0");
  if (is_moe()) {
    PRIMA_RETURN_IF_ERROR(positive("expert_ffn", expert_ffn));
    if (experts_per_token <= 0 || experts_per_token > experts)
      return invalid_argument(
          where + "experts_per_token must be in [1, experts=" + std::to_string(experts) +
          "], got " + std::to_string(experts_per_token));
    if (shared_experts < 0 || dense_layers < 0 || dense_layers >= layers)
      return invalid_argument(where + "shared_experts must be >= 0 and dense_layers in [0, " +
                              std::to_string(layers) + ")");
    if (dense_layers > 0) PRIMA_RETURN_IF_ERROR(positive("ffn", ffn));
  } else {
    PRIMA_RETURN_IF_ERROR(positive("ffn", ffn));
    if (experts_per_token != 0 || shared_experts != 0 || dense_layers != 0)
      return invalid_argument(
          where + "experts_per_token, shared_experts and dense_layers need experts > 0");
  }
  return ok_status();
}

double layer_weight_bytes(double params, Quantization q) {
  return params * weight_bytes_per_param(q);
}

double model_weight_bytes(const ModelSpec& m, Quantization q) {
  double layers = 0;
  for (int l = 0; l < m.layers; ++l) layers += m.layer_params(l);
  return layer_weight_bytes(layers, q) +
         2.0 * (m.embedding_params() + m.lm_head_params() + m.hidden);
}

}  // namespace prima::model
