// The built-in model catalog and parse_model (see model_spec.h). Figures come from each
// model's published config.json / model card; `source` names it.
#include <algorithm>
#include <cctype>

#include "engine/model/model_spec.h"

namespace prima::model {
namespace {

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

ModelSpec dense(std::string name, std::string source, int layers, int hidden, int heads,
                int kv_heads, int ffn, int vocab, int max_context, bool tied = false) {
  ModelSpec m;
  m.name = std::move(name);
  m.source = std::move(source);
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = kv_heads;
  m.head_dim = hidden / heads;
  m.ffn = ffn;
  m.vocab = vocab;
  m.max_context = max_context;
  m.tied_embeddings = tied;
  return m;
}

// Mixture of experts on top of an architecture: `experts` routed experts of width
// expert_ffn, top-k, `shared` shared experts, the first dense_layers layers dense.
ModelSpec moe(ModelSpec m, int experts, int top_k, int expert_ffn, int shared = 0,
              int dense_layers = 0) {
  m.experts = experts;
  m.experts_per_token = top_k;
  m.expert_ffn = expert_ffn;
  m.shared_experts = shared;
  m.dense_layers = dense_layers;
  return m;
}

// DeepSeek-V3's multi-head latent attention: q_lora_rank 1536, kv_lora_rank 512, qk_nope
// 128 = head_dim, qk_rope 64, v_head 128.
ModelSpec mla(ModelSpec m) {
  m.head_dim = 128;
  m.kv_lora_rank = 512;
  m.rope_dim = 64;
  m.q_lora_rank = 1536;
  return m;
}

struct Entry {
  const char* key;
  ModelSpec spec;
};

std::vector<Entry> build_catalog() {
  std::vector<Entry> c;
  c.push_back({"llama-2-7b", dense("Llama-2-7B",
                                   "meta-llama/Llama-2-7b-hf config.json; Touvron et al. 2023 "
                                   "(6.74B parameters)",
                                   32, 4096, 32, 32, 11008, 32000, 4096)});
  c.push_back({"llama-2-13b",
               dense("Llama-2-13B", "meta-llama/Llama-2-13b-hf config.json (13.0B parameters)", 40,
                     5120, 40, 40, 13824, 32000, 4096)});
  c.push_back({"llama-2-70b",
               dense("Llama-2-70B", "meta-llama/Llama-2-70b-hf config.json (69.0B, GQA 8 KV heads)",
                     80, 8192, 64, 8, 28672, 32000, 4096)});
  {
    // BLOOM: multi-head attention with ALiBi (no rotary), a GELU FFN of two 4h matrices.
    ModelSpec m = dense("BLOOM-176B",
                        "bigscience/bloom config.json (70 layers, hidden 14336, 112 heads, vocab "
                        "250880; 176B parameters; biases not counted)",
                        70, 14336, 112, 112, 4 * 14336, 250880, 2048, /*tied=*/true);
    m.ffn_matrices = 2;
    m.alibi = true;
    c.push_back({"bloom-176b", m});
  }
  c.push_back({"llama-3-8b",
               dense("Llama-3-8B", "meta-llama/Meta-Llama-3-8B config.json (8.03B parameters)", 32,
                     4096, 32, 8, 14336, 128256, 8192)});
  c.push_back({"llama-3-70b",
               dense("Llama-3-70B", "meta-llama/Meta-Llama-3-70B config.json (70.6B parameters)",
                     80, 8192, 64, 8, 28672, 128256, 8192)});
  // Llama 3.1: Llama 3's shapes with a 128k context (rope scaling changes no cost).
  c.push_back({"llama-3.1-8b",
               dense("Llama-3.1-8B",
                     "meta-llama/Llama-3.1-8B config.json (8.03B parameters, 131072 context)", 32,
                     4096, 32, 8, 14336, 128256, 131072)});
  c.push_back({"llama-3.1-70b",
               dense("Llama-3.1-70B",
                     "meta-llama/Llama-3.1-70B config.json (70.6B parameters, 131072 context)", 80,
                     8192, 64, 8, 28672, 128256, 131072)});
  c.push_back({"llama-3.1-405b",
               dense("Llama-3.1-405B",
                     "meta-llama/Llama-3.1-405B config.json (126 layers, hidden 16384, 128 "
                     "heads, 8 KV heads, FFN 53248; 405B parameters)",
                     126, 16384, 128, 8, 53248, 128256, 131072)});
  c.push_back(
      {"mistral-7b", dense("Mistral-7B", "mistralai/Mistral-7B-v0.3 config.json (7.25B parameters)",
                           32, 4096, 32, 8, 14336, 32768, 32768)});
  c.push_back({"smollm2-135m",
               dense("SmolLM2-135M",
                     "HuggingFaceTB/SmolLM2-135M config.json (tied embeddings, 135M parameters)",
                     30, 576, 9, 3, 1536, 49152, 8192, /*tied=*/true)});
  c.push_back({"mixtral-8x7b",
               moe(dense("Mixtral-8x7B",
                         "mistralai/Mixtral-8x7B-v0.1 config.json (46.7B total, 12.9B active)", 32,
                         4096, 32, 8, 14336, 32000, 32768),
                   8, 2, 14336)});
  c.push_back({"mixtral-8x22b",
               moe(dense("Mixtral-8x22B",
                         "mistralai/Mixtral-8x22B-v0.1 config.json (141B total, 39B active)", 56,
                         6144, 48, 8, 16384, 32768, 65536),
                   8, 2, 16384)});
  {
    // DeepSeek-V3: 61 layers (the first 3 dense, FFN 18432), hidden 7168, 128 heads with MLA
    // (q_lora_rank 1536, kv_lora_rank 512, qk_nope 128 = head_dim, qk_rope 64, v_head 128),
    // 256 routed experts of width 2048, top-8, 1 shared, vocab 129280, untied. The
    // multi-token-prediction module (14B) is not counted: 671B total, 37B active.
    ModelSpec m = moe(mla(dense("DeepSeek-V3",
                                "deepseek-ai/DeepSeek-V3 config.json (671B total, 37B active; "
                                "MTP module not counted)",
                                61, 7168, 128, 128, 18432, 129280, 163840)),
                      256, 8, 2048, 1, 3);
    c.push_back({"deepseek-v3", m});
  }
  {
    // Qwen3-235B-A22B: 94 layers, all MoE (128 experts of width 1536, top-8, no shared), GQA
    // 64 heads / 4 KV heads of head_dim 128 (wider than hidden / heads), vocab 151936, untied.
    ModelSpec m =
        moe(dense("Qwen3-235B-A22B", "Qwen/Qwen3-235B-A22B config.json (235B total, 22B active)",
                  94, 4096, 64, 4, 12288, 151936, 40960),
            128, 8, 1536);
    m.head_dim = 128;
    c.push_back({"qwen3-235b-a22b", m});
  }
  {
    // A Kimi-K2-like ~1T MoE (DeepSeek-V3 architecture), from moonshotai/Kimi-K2-Instruct
    // config.json: 61 layers (the first dense, FFN 18432), hidden 7168, 64 heads with MLA
    // (q_lora_rank 1536, kv_lora_rank 512, qk_nope 128 = head_dim, qk_rope 64, v_head 128),
    // 384 routed experts of width 2048, top-8, 1 shared expert, vocab 163840, untied.
    // Counted: 1.026e12 total / 32.9e9 active (published: "1T total, 32B active"; the
    // multi-token-prediction layer is not counted). Assumption: max_context 1M tokens for the
    // seed-004 long-context deployment (Kimi-K2 itself ships with 128k).
    ModelSpec m = moe(mla(dense("MoE-1T",
                                "moonshotai/Kimi-K2-Instruct config.json (DeepSeek-V3 MLA + "
                                "MoE); max_context 1M is the seed-004 assumption",
                                61, 7168, 64, 64, 18432, 163840, 1048576)),
                      384, 8, 2048, 1, 1);
    c.push_back({"moe-1t", m});
  }
  return c;
}

const std::vector<Entry>& catalog() {
  static const std::vector<Entry> kCatalog = build_catalog();
  return kCatalog;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

int int_field(const config::JsonReader& r, const char* key, int def) {
  return static_cast<int>(r.non_negative_integer(key, def));
}

ModelSpec parse_model_object(const config::JsonReader& r) {
  ModelSpec m;
  const bool has_base = r.has("base");
  if (has_base) {
    auto base = model_by_name(r.string("base"));
    if (!base.ok()) r.fail("base", base.status().message());
    m = *base;
  } else {
    r.consume("base");
  }
  m.name = has_base ? r.string("name", m.name) : r.string("name");
  m.source = r.string("source", has_base ? m.source : "given inline");
  const int old_hidden = m.hidden, old_heads = m.heads;
  m.layers = int_field(r, "layers", m.layers);
  m.hidden = int_field(r, "hidden", m.hidden);
  m.heads = int_field(r, "heads", m.heads);
  m.kv_heads = int_field(r, "kv_heads", m.kv_heads == 0 ? m.heads : m.kv_heads);
  const bool reshaped = m.hidden != old_hidden || m.heads != old_heads;
  const int derived_head_dim = m.heads > 0 ? m.hidden / m.heads : 0;
  m.head_dim =
      int_field(r, "head_dim", reshaped || m.head_dim == 0 ? derived_head_dim : m.head_dim);
  m.ffn = int_field(r, "ffn", m.ffn);
  m.ffn_matrices = int_field(r, "ffn_matrices", m.ffn_matrices);
  if (m.ffn_matrices != 2 && m.ffn_matrices != 3)
    r.fail("ffn_matrices", "expected 3 (SwiGLU: gate, up, down) or 2 (GELU: up, down)");
  m.vocab = int_field(r, "vocab", m.vocab);
  m.tied_embeddings = r.boolean("tied_embeddings", m.tied_embeddings);
  m.alibi = r.boolean("alibi", m.alibi);
  m.max_context = int_field(r, "max_context", m.max_context);
  m.experts = int_field(r, "experts", m.experts);
  m.experts_per_token = int_field(r, "experts_per_token", m.experts_per_token);
  m.shared_experts = int_field(r, "shared_experts", m.shared_experts);
  m.expert_ffn = int_field(r, "expert_ffn", m.expert_ffn);
  m.dense_layers = int_field(r, "dense_layers", m.dense_layers);
  m.kv_lora_rank = int_field(r, "kv_lora_rank", m.kv_lora_rank);
  m.rope_dim = int_field(r, "rope_dim", m.rope_dim);
  m.q_lora_rank = int_field(r, "q_lora_rank", m.q_lora_rank);
  r.finish();
  Status st = m.validate();
  if (!st.ok()) r.fail_here(st.message());
  return m;
}

}  // namespace

Result<ModelSpec> model_by_name(const std::string& name) {
  const std::string l = lower(name);
  for (const auto& e : catalog())
    if (l == e.key || l == lower(e.spec.name)) return e.spec;
  return not_found("unknown model \"" + name + "\"; built-in models: " + join(model_names()));
}

std::vector<std::string> model_names() {
  std::vector<std::string> names;
  for (const auto& e : catalog()) names.push_back(e.key);
  return names;
}

ModelSpec parse_model(const config::JsonReader& parent, const std::string& key) {
  const config::Json& v = parent.value(key);
  if (v.is_string()) {
    auto m = model_by_name(v.get<std::string>());
    if (!m.ok()) parent.fail(key, m.status().message());
    return *m;
  }
  if (!v.is_object())
    parent.fail(key, "expected a model name (" + join(model_names()) + ") or an object, got " +
                         config::describe(v));
  return parse_model_object(parent.object(key));
}

}  // namespace prima::model
