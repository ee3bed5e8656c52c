// Synthetic models: GGUF files of real models' shapes (Llama 3 8B and 70B, Llama 3.2 1B,
// SmolLM2-135M, Mistral 7B, a tiny one for tests) with seeded pseudo-random weights, for
// measuring and checking a forward pass where the real weights are not at hand (a lent GPU
// machine reaches no registry). `--synthetic llama-3-8b:bf16` on prima generate, profile and
// serve makes the file once in a cache folder and opens it as a model: the CPU path and the
// GPU forward pass read the same bytes, so their tokens can be compared.
//
// The file: the llama architecture's metadata of the shape; a byte-level GPT-2 vocabulary
// (256 byte tokens, <|endoftext|> as BOS/EOS, fillers <|synthetic_N|> up to the vocabulary
// size; no merges) so text prompts tokenize; every weight matrix in the chosen type (F16,
// BF16, Q8_0, Q4_0 or Q4_1), norms in F32. Values are uniform with a fixed spread per
// tensor kind (projections 1/sqrt(fan-in)-sized, norms around 1), generated row by row
// from a hash of (seed, tensor, row): the same spec gives the same bytes whatever the
// number of threads. Written through an mmap of the file (a tensor is never held in memory
// whole) to NAME.tmp.PID, then renamed: a reader never sees a partial file.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/core/status.h"
#include "kernels/cpu/quant.h"

namespace prima::real {

struct SyntheticShape {
  std::string name;  // "llama-3-8b"
  int layers = 0, hidden = 0, heads = 0, kv_heads = 0, ffn = 0, vocab = 0, context = 0;
  float rope_base = 10000.f, eps = 1e-5f;
  bool tied = false;  // LM head = token embedding
  std::string about;  // what it is the shape of
};

// The known shapes, in the order --help lists them.
const std::vector<SyntheticShape>& synthetic_shapes();

struct SyntheticSpec {
  SyntheticShape shape;
  kernels::DType type = kernels::DType::kBF16;  // every weight matrix and the embedding
  std::uint64_t seed = 1;
};

// "NAME[:TYPE]" (TYPE f16, bf16, q8_0, q4_0 or q4_1; default bf16). An unknown name or type
// is an invalid_argument listing the known ones.
Result<SyntheticSpec> parse_synthetic(const std::string& text);

// "llama-3-8b-bf16-s1.gguf"
std::string synthetic_file_name(const SyntheticSpec& s);
// Parameters and the file's size in bytes (tensor data; the header is a few MiB at most).
std::uint64_t synthetic_params(const SyntheticSpec& s);
std::uint64_t synthetic_bytes(const SyntheticSpec& s);

// Writes the model to `path` with `threads` threads (0: all cores).
Status write_synthetic(const SyntheticSpec& s, const std::string& path, int threads = 0);

// The cache folder: $PRIMA_SYNTHETIC_DIR, else $XDG_CACHE_HOME/prima/synthetic, else
// $HOME/.cache/prima/synthetic, else /tmp/prima-synthetic.
std::string synthetic_cache_dir();

// The model's path in `dir`, written first when it is not there (`note` is told what is
// made and when it is done). Fails naming the folder when it cannot be made or lacks the
// space (the bytes needed and free).
Result<std::string> ensure_synthetic(const SyntheticSpec& s, const std::string& dir,
                                     const std::function<void(const std::string&)>& note = {});

}  // namespace prima::real
