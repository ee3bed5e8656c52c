// Model architectures and quantization formats: the data the cost model, the memory-fit
// check and the real backend agree on. Plain values; thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "engine/config/json_reader.h"
#include "engine/core/status.h"

namespace prima::model {

enum class Quantization { kFP16, kBF16, kW8A8, kW4A16, kFP8 };

const char* quantization_name(Quantization q);  // "fp16", "bf16", "w8a8", "w4a16", "fp8"
bool parse_quantization(const std::string& s, Quantization* out);
std::vector<std::string> quantization_names();

// Bytes per weight element including scales (W4A16: group size 128, fp16 scale + zero).
double weight_bytes_per_param(Quantization q);
// Bytes per activation element (fp16/bf16: 2; w8a8 and fp8 GEMM inputs are 8-bit: 1).
double gemm_activation_bytes(Quantization q);

struct ModelSpec {
  std::string name;
  std::string source;  // where the figures come from (model card / config)
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;      // hidden / heads unless stated
  int ffn = 0;           // dense FFN width
  int ffn_matrices = 3;  // dense FFN weight matrices: 3 SwiGLU (gate, up, down), 2 GELU (up, down)
  int vocab = 0;
  bool tied_embeddings = false;
  // ALiBi position bias (BLOOM, MPT) instead of rotary embeddings: attention kernels without
  // ALiBi support read a materialized bias per attended pair and head.
  bool alibi = false;
  int max_context = 4096;
  // Mixture of experts (experts == 0: dense). MoE layers use expert_ffn per expert.
  int experts = 0;
  int experts_per_token = 0;
  int shared_experts = 0;
  int expert_ffn = 0;
  int dense_layers = 0;  // leading layers that stay dense in an MoE model
  // Multi-head latent attention (kv_lora_rank > 0): KV cache per token per layer is
  // (kv_lora_rank + rope_dim) elements instead of 2 * kv_heads * head_dim.
  int kv_lora_rank = 0;
  int rope_dim = 0;
  int q_lora_rank = 0;  // MLA query compression (0: queries projected directly from hidden)

  bool is_moe() const { return experts > 0; }
  // Parameter counts (elements, not bytes).
  // Attention projections of one layer plus its two RMSNorm weight vectors. With MLA the
  // projections are q_a/q_b (or q), kv_a (latent + rope key), kv_b and o (DeepSeek-V3 layout).
  double attention_params_per_layer() const;
  double attention_out_params_per_layer() const;  // o_proj: heads * head_dim * hidden
  double qkv_params_per_layer() const;            // attention projections without o_proj and norms
  double expert_params() const;                   // one SwiGLU expert: 3 * hidden * expert_ffn
  bool is_dense_layer(int layer) const { return !is_moe() || layer < dense_layers; }
  double layer_params(int layer) const;          // attention + FFN/experts (+ router) + norms
  double ffn_params_per_layer(int layer) const;  // all experts of that layer
  double active_ffn_params_per_layer(int layer) const;  // experts used per token
  double embedding_params() const;                      // input embedding
  double lm_head_params() const;                        // 0 when tied
  double total_params() const;                          // layers + embedding + LM head + final norm
  double active_params() const;                         // per token
  // KV cache elements per token per layer (K and V together, or MLA latent).
  double kv_elements_per_token_per_layer() const;
  // KV cache bytes per token, all layers, at `kv_bytes` per element (2 for fp16).
  double kv_bytes_per_token(double kv_bytes = 2) const;
  // Useful FLOPs of a forward pass over `new_tokens` tokens whose last one is at position
  // context_len - 1 (the earlier ones cached): 2 per weight per token in the layers'
  // projections and active experts, causal attention (QK^T and AV: 4 x heads x head_dim per
  // attended pair), and the LM head for one row when `samples`.
  double forward_flops(int new_tokens, int context_len, bool samples) const;

  Status validate() const;  // positive sizes, heads divisible, etc.
};

// Weight bytes of a parameter count of transformer layers at quantization q (embeddings, the LM
// head and norms stay 16-bit in every format, as in AWQ/GPTQ/SmoothQuant checkpoints).
double layer_weight_bytes(double params, Quantization q);
// Whole-model weight bytes at quantization q.
double model_weight_bytes(const ModelSpec& m, Quantization q);

// The built-in catalog: "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3-8b",
// "llama-3-70b", "smollm2-135m", "bloom-176b", "mixtral-8x7b", "mixtral-8x22b", "deepseek-v3",
// "qwen3-235b-a22b", "moe-1t". Names are case-insensitive.
Result<ModelSpec> model_by_name(const std::string& name);
std::vector<std::string> model_names();

// A model given in a scenario: a catalog name, or an object with the fields above
// (optionally "base": a catalog name whose fields it overrides).
ModelSpec parse_model(const config::JsonReader& parent, const std::string& key);

}  // namespace prima::model
