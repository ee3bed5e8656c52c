// LlamaConfig from GGUF metadata and LlamaWeights binding (row-slice views into the
// mapping). Runs once at load on the loading thread.
#include "backends/real/llama_weights.h"

namespace prima::real {

namespace {

std::string dims_str(const std::vector<std::int64_t>& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

Result<const TensorInfo*> find_tensor(const GgufFile& f, const std::string& name,
                                      std::vector<std::int64_t> dims) {
  const TensorInfo* t = f.tensor(name);
  if (!t) return invalid_argument(f.path() + ": missing tensor " + name);
  if (t->dims != dims)
    return invalid_argument(f.path() + ": tensor " + name + " has shape " + dims_str(t->dims) +
                            ", expected " + dims_str(dims) + " from the llama.* metadata");
  if (!kernels::type_traits(t->type))
    return invalid_argument(f.path() + ": tensor " + name + " has an unsupported type " +
                            std::to_string(static_cast<unsigned>(t->type)));
  return t;
}

Result<int> get_positive(const GgufFile& f, const std::string& key) {
  PRIMA_ASSIGN_OR_RETURN(std::int64_t v, f.get_int(key));
  if (v <= 0 || v > (1 << 30))
    return invalid_argument(f.path() + ": metadata " + key + " = " + std::to_string(v) +
                            " is out of range");
  return static_cast<int>(v);
}

}  // namespace

model::ModelSpec model_spec_of(const GgufFile& f, const LlamaConfig& c) {
  model::ModelSpec m;
  m.name = f.get_string_or("general.name", "llama");
  m.source = f.path();
  m.layers = c.layers;
  m.hidden = c.hidden;
  m.heads = c.heads;
  m.kv_heads = c.kv_heads;
  m.head_dim = c.head_dim;
  m.ffn = c.ffn;
  m.vocab = c.vocab;
  m.tied_embeddings = c.tied_embeddings;
  m.max_context = c.context_length;
  return m;
}

Result<LlamaConfig> read_llama_config(const GgufFile& f) {
  const std::string arch = f.get_string_or("general.architecture", "");
  if (arch != "llama")
    return invalid_argument(f.path() + ": unsupported architecture '" + arch +
                            "' (general.architecture); prima's real backend runs llama models");
  LlamaConfig c;
  PRIMA_ASSIGN_OR_RETURN(c.layers, get_positive(f, "llama.block_count"));
  PRIMA_ASSIGN_OR_RETURN(c.hidden, get_positive(f, "llama.embedding_length"));
  PRIMA_ASSIGN_OR_RETURN(c.ffn, get_positive(f, "llama.feed_forward_length"));
  PRIMA_ASSIGN_OR_RETURN(c.heads, get_positive(f, "llama.attention.head_count"));
  c.kv_heads = static_cast<int>(f.get_int_or("llama.attention.head_count_kv", c.heads));
  c.context_length = static_cast<int>(f.get_int_or("llama.context_length", 2048));
  c.eps = static_cast<float>(f.get_float_or("llama.attention.layer_norm_rms_epsilon", 1e-5));
  c.freq_base = static_cast<float>(f.get_float_or("llama.rope.freq_base", 10000.0));
  if (c.hidden % c.heads != 0)
    return invalid_argument(f.path() + ": llama.embedding_length " + std::to_string(c.hidden) +
                            " is not a multiple of llama.attention.head_count " +
                            std::to_string(c.heads));
  if (c.kv_heads <= 0 || c.heads % c.kv_heads != 0)
    return invalid_argument(f.path() + ": llama.attention.head_count_kv " +
                            std::to_string(c.kv_heads) + " does not divide head_count " +
                            std::to_string(c.heads));
  c.head_dim = c.hidden / c.heads;
  c.rot_dims = static_cast<int>(f.get_int_or("llama.rope.dimension_count", c.head_dim));
  if (c.rot_dims <= 0 || c.rot_dims > c.head_dim || c.rot_dims % 2)
    return invalid_argument(f.path() + ": llama.rope.dimension_count " +
                            std::to_string(c.rot_dims) + " must be even and <= head_dim " +
                            std::to_string(c.head_dim));
  if (c.context_length <= 0)
    return invalid_argument(f.path() + ": llama.context_length must be positive");
  std::int64_t vocab = f.get_int_or("llama.vocab_size", 0);
  if (vocab <= 0) {
    if (auto a = f.get_array("tokenizer.ggml.tokens"); a.ok())
      vocab = static_cast<std::int64_t>((*a)->strings.size());
  }
  if (vocab <= 0) {
    if (const TensorInfo* t = f.tensor("token_embd.weight"); t && t->dims.size() == 2)
      vocab = t->dims[1];
  }
  if (vocab <= 0)
    return invalid_argument(f.path() +
                            ": no vocabulary size (llama.vocab_size, "
                            "tokenizer.ggml.tokens or token_embd.weight)");
  c.vocab = static_cast<int>(vocab);
  c.tied_embeddings = f.tensor("output.weight") == nullptr;
  return c;
}

Status check_tp(const LlamaConfig& c, const GgufFile& f, int tp) {
  if (tp < 1) return invalid_argument("tensor parallel degree " + std::to_string(tp) + " < 1");
  auto bad = [&](const std::string& what, int n) {
    return invalid_argument("--tp " + std::to_string(tp) + " does not divide the model's " + what +
                            " (" + std::to_string(n) + ")");
  };
  if (c.heads % tp) return bad("attention heads", c.heads);
  if (c.kv_heads % tp) return bad("KV heads", c.kv_heads);
  if (c.ffn % tp) return bad("FFN width", c.ffn);
  if (c.hidden % tp) return bad("hidden size", c.hidden);
  return ok_status();
}

const float* LlamaWeights::norm_vector(const TensorInfo* t) {
  if (t->type == kernels::DType::kF32) return reinterpret_cast<const float*>(t->data);
  const auto n = t->elements();
  auto buf = std::make_unique<std::uint8_t[]>(n * sizeof(float));
  kernels::dequantize_row(t->type, t->data, reinterpret_cast<float*>(buf.get()), n);
  owned_.push_back(std::move(buf));
  return reinterpret_cast<const float*>(owned_.back().get());
}

Result<std::unique_ptr<LlamaWeights>> LlamaWeights::bind(const GgufFile& f, const LlamaConfig& c,
                                                         const ShardSpec& s, bool repack) {
  PRIMA_RETURN_IF_ERROR(check_tp(c, f, s.tp));
  std::unique_ptr<LlamaWeights> w(new LlamaWeights());
  w->f_ = &f;
  w->c_ = c;
  w->s_ = s;
  if (w->s_.layer_end < 0) w->s_.layer_end = c.layers;
  if (w->s_.layer_begin < 0 || w->s_.layer_begin > w->s_.layer_end || w->s_.layer_end > c.layers)
    return invalid_argument("layer range [" + std::to_string(s.layer_begin) + ", " +
                            std::to_string(s.layer_end) + ") outside the model's " +
                            std::to_string(c.layers) + " layers");
  const std::int64_t H = c.hidden, D = c.head_dim, F = c.ffn;
  const std::int64_t q_rows = std::int64_t(c.heads) * D, kv_rows = std::int64_t(c.kv_heads) * D;
  const int tp = s.tp, r = s.tp_rank;

  // Rows [r*rows/tp, (r+1)*rows/tp) of a matrix: a view into the mapping.
  auto row_slice = [&](const TensorInfo* t, std::int64_t rows, std::int64_t cols) {
    kernels::WeightView v;
    v.type = t->type;
    v.rows = rows / tp;
    v.cols = cols;
    v.data = t->data + std::size_t(r) * v.rows * kernels::row_bytes(t->type, cols);
    return v;
  };
  for (int l = w->s_.layer_begin; l < w->s_.layer_end; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    LayerWeights lw;
    PRIMA_ASSIGN_OR_RETURN(const TensorInfo* an, find_tensor(f, p + "attn_norm.weight", {H}));
    PRIMA_ASSIGN_OR_RETURN(const TensorInfo* fn, find_tensor(f, p + "ffn_norm.weight", {H}));
    PRIMA_ASSIGN_OR_RETURN(const TensorInfo* q, find_tensor(f, p + "attn_q.weight", {H, q_rows}));
    PRIMA_ASSIGN_OR_RETURN(const TensorInfo* k, find_tensor(f, p + "attn_k.weight", {H, kv_rows}));
    PRIMA_ASSIGN_OR_RETURN(const TensorInfo* v, find_tensor(f, p + "attn_v.weight", {H, kv_rows}));
    PRIMA_ASSIGN_OR_RETURN(const TensorInfo* o,
                           find_tensor(f, p + "attn_output.weight", {q_rows, H}));
    PRIMA_ASSIGN_OR_RETURN(const TensorInfo* g, find_tensor(f, p + "ffn_gate.weight", {H, F}));
    PRIMA_ASSIGN_OR_RETURN(const TensorInfo* u, find_tensor(f, p + "ffn_up.weight", {H, F}));
    PRIMA_ASSIGN_OR_RETURN(const TensorInfo* d, find_tensor(f, p + "ffn_down.weight", {F, H}));
    lw.attn_norm = w->norm_vector(an);
    lw.ffn_norm = w->norm_vector(fn);
    lw.wq = row_slice(q, q_rows, H);
    lw.wk = row_slice(k, kv_rows, H);
    lw.wv = row_slice(v, kv_rows, H);
    lw.wo = row_slice(o, H, q_rows);
    lw.gate = row_slice(g, F, H);
    lw.up = row_slice(u, F, H);
    lw.down = row_slice(d, H, F);
    w->layers_.push_back(lw);
  }
  PRIMA_ASSIGN_OR_RETURN(const TensorInfo* emb, find_tensor(f, "token_embd.weight", {H, c.vocab}));
  w->token_embd_ = {emb->type, emb->data, c.vocab, H};
  if (s.head) {
    PRIMA_ASSIGN_OR_RETURN(const TensorInfo* on, find_tensor(f, "output_norm.weight", {H}));
    w->output_norm_ = w->norm_vector(on);
    if (c.tied_embeddings) {
      w->output_ = w->token_embd_;
    } else {
      PRIMA_ASSIGN_OR_RETURN(const TensorInfo* out, find_tensor(f, "output.weight", {H, c.vocab}));
      w->output_ = {out->type, out->data, c.vocab, H};
    }
  }
  if (repack) {
    auto pack = [&](kernels::WeightView& v) {
      if (!kernels::repack_supported(v.type)) return;
      w->packed_.push_back(kernels::pack_weights(v));
      v.packed = w->packed_.back().get();
      // The matmuls read the panels only: the mapped copy need not stay resident.
      f.drop_pages(v.data, std::size_t(v.rows) * kernels::row_bytes(v.type, v.cols));
    };
    for (LayerWeights& lw : w->layers_)
      for (kernels::WeightView* v : {&lw.wq, &lw.wk, &lw.wv, &lw.wo, &lw.gate, &lw.up, &lw.down})
        pack(*v);
    if (s.head) pack(w->output_);  // token_embd_ stays unpacked: embed() reads its rows
  }
  return w;
}

void LlamaWeights::embed(int id, float* out) const {
  const std::size_t rb = kernels::row_bytes(token_embd_.type, token_embd_.cols);
  kernels::dequantize_row(token_embd_.type,
                          static_cast<const std::uint8_t*>(token_embd_.data) + std::size_t(id) * rb,
                          out, token_embd_.cols);
}

}  // namespace prima::real
