// Llama model description (LlamaConfig, read from a GGUF file's llama.* metadata) and one
// rank's weights bound to the memory-mapped tensors (LlamaWeights).
//
// Sharding (ShardSpec): pipeline stages own a range of layers; tensor parallelism splits
// every layer matrix by output rows (views into the mapping, no copies): attn_q/k/v by
// heads, ffn_gate/up by FFN columns, attn_output/ffn_down by hidden rows. Each output
// element is then computed exactly as in a single process (a whole-row dot product), and
// the stage gathers the slices (see LlamaForward), so TP gives the single-process tokens
// bit for bit. Norms, embeddings and the LM head are replicated.
// Immutable after bind(); thread-safe for readers. Borrows the GgufFile (must outlive it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/real/gguf.h"
#include "engine/core/status.h"
#include "engine/model/model_spec.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/packed.h"

namespace prima::real {

struct LlamaConfig {
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int ffn = 0;
  int vocab = 0;
  int context_length = 0;
  int rot_dims = 0;  // rope.dimension_count (head_dim when absent)
  float eps = 1e-5f;
  float freq_base = 10000.f;
  bool tied_embeddings = false;  // no output.weight: the LM head is token_embd
};

// Reads and checks the llama.* metadata (error names the key or the architecture found).
Result<LlamaConfig> read_llama_config(const GgufFile& f);

// The model as the engine and the cost model see it (name from general.name).
model::ModelSpec model_spec_of(const GgufFile& f, const LlamaConfig& c);

struct ShardSpec {
  int tp = 1, tp_rank = 0;
  int layer_begin = 0, layer_end = -1;  // -1: all layers
  bool embed = true;                    // first stage: token embeddings
  bool head = true;                     // last stage: final norm + LM head
};

// Checks that `tp` divides heads, kv_heads, ffn and hidden (error names the numbers).
Status check_tp(const LlamaConfig& c, const GgufFile& f, int tp);

struct LayerWeights {
  const float* attn_norm = nullptr;  // hidden
  const float* ffn_norm = nullptr;   // hidden
  kernels::WeightView wq, wk, wv;    // rows: this rank's heads x head_dim
  kernels::WeightView wo;            // (hidden / tp) x (heads x head_dim)
  kernels::WeightView gate, up;      // rows: ffn / tp
  kernels::WeightView down;          // (hidden / tp) x ffn
};

class LlamaWeights {
 public:
  // Binds this shard's tensors; checks every tensor's presence and shape against `c`. With
  // `repack`, the matrices of types the CPU's packed kernels take (kernels::repack_supported:
  // Q4_1, Q8_0 on AVX-512 VNNI) are also copied into 16-row panels (kernels/cpu/packed.h)
  // and the matmuls read those: faster, but no longer llama.cpp's float operations (each
  // product differs in its last bits; greedy tokens can differ where two logits are close).
  static Result<std::unique_ptr<LlamaWeights>> bind(const GgufFile& f, const LlamaConfig& c,
                                                    const ShardSpec& s, bool repack = false);
  // Whether any matrix is packed.
  bool repacked() const { return !packed_.empty(); }

  const LlamaConfig& config() const { return c_; }
  const GgufFile& file() const { return *f_; }  // the file the views point into
  const ShardSpec& shard() const { return s_; }
  int local_heads() const { return c_.heads / s_.tp; }
  int local_kv_heads() const { return c_.kv_heads / s_.tp; }
  int local_ffn() const { return c_.ffn / s_.tp; }
  int num_layers() const { return static_cast<int>(layers_.size()); }
  const LayerWeights& layer(int i) const { return layers_[i]; }  // i: 0 .. num_layers()-1
  // Dequantizes token `id`'s embedding row into out (hidden floats).
  void embed(int id, float* out) const;
  // The token embedding table (vocab rows of hidden).
  const kernels::WeightView& token_embd() const { return token_embd_; }
  const float* output_norm() const { return output_norm_; }
  const kernels::WeightView& output() const { return output_; }

 private:
  LlamaWeights() = default;
  const float* norm_vector(const TensorInfo* t);
  const GgufFile* f_ = nullptr;
  LlamaConfig c_;
  ShardSpec s_;
  std::vector<LayerWeights> layers_;
  kernels::WeightView token_embd_;
  const float* output_norm_ = nullptr;
  kernels::WeightView output_;
  std::vector<std::unique_ptr<std::uint8_t[]>> owned_;  // norms converted to f32
  std::vector<kernels::PackedBuffer> packed_;           // panels of the packed matrices
};

}  // namespace prima::real
