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
//
// Weights made on the device (SyntheticSpec::device_weights, the default of `--synthetic` with
// `--device cuda`): the file holds the metadata, the norms and, in prima.synthetic.* keys, what
// it was made from; the matrices' data is a hole (a sparse file of a few MiB on disk). The GPU
// forward pass makes each matrix where it will be read (kernels/cuda/synthetic.cu), the same
// bits as the file of the same spec would hold (kernels/cuda/synthetic_math.h is the one
// formula), and the CPU path refuses such a file (check_host_weights).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "backends/real/gguf.h"
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
  bool device_weights = false;  // matrices made on the device: the file holds no matrix data
};

// "NAME[:TYPE]" (TYPE f16, bf16, q8_0, q4_0 or q4_1; default bf16). An unknown name or type
// is an invalid_argument listing the known ones.
Result<SyntheticSpec> parse_synthetic(const std::string& text);

// "llama-3-8b-bf16-s1.gguf"; "llama-3-8b-bf16-s1-device.gguf" with device_weights.
std::string synthetic_file_name(const SyntheticSpec& s);
// Parameters and the file's size in bytes (tensor data; the header is a few MiB at most).
std::uint64_t synthetic_params(const SyntheticSpec& s);
std::uint64_t synthetic_bytes(const SyntheticSpec& s);

// The bytes written into the file's data: synthetic_bytes, or only the norms' with
// device_weights (the rest is a hole).
std::uint64_t synthetic_written_bytes(const SyntheticSpec& s);

// What the generator draws tensor `name` from: its number in the file's order (the draw's
// tensor index) and the uniform's half width and centre.
struct SyntheticTensor {
  std::uint64_t index = 0;
  float half_width = 0, mean = 0;
};
// not_found for a name the model does not have.
Result<SyntheticTensor> synthetic_tensor(const SyntheticSpec& s, const std::string& name);

// The spec a file of weights made on the device was written from (its prima.synthetic.* keys),
// nullopt for any other file; an error naming the key when they are malformed.
Result<std::optional<SyntheticSpec>> device_synthetic_spec(const GgufFile& f);

// Fails (naming the file and how to get its weights) when `f`'s matrices are made on the
// device and the forward pass is the CPU's.
Status check_host_weights(const GgufFile& f);

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
