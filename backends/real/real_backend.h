// RealBackend: everything `prima generate`, `prima profile` and `prima serve --backend real`
// need to run a GGUF model through the engine: the model file (mmap), the tokenizer, the
// communicator (TP x PP ranks under mpirun), the KV cache and the Executor of one replica.
//
// On rank 0 (the leader) executor() is what the engine's Replica drives: launch() copies the
// step's inputs (token ids from Sequence::token_at, block tables, sampling parameters) on the
// loop, runs the forward pass on the backend's worker thread (kernels on its ThreadPool; TP
// all-reduces and PP activations over the communicator with the other ranks) and posts the
// StepResult (sampled ids in StepResult::tokens) back to the loop. Other ranks call
// run_worker(), which executes the leader's steps until it shuts down.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/model/model_spec.h"
#include "engine/runtime.h"

namespace prima::real {

class Tokenizer;
class GgufFile;

struct RealBackendOptions {
  std::string model_path;
  std::string manifest;  // GgufOpenOptions::manifest
  int threads = 0;       // kernel threads per rank (0: hardware concurrency)
  int tp = 1, pp = 1;    // must match the ranks launched (tp * pp == world size)
  // Longest wait for another rank (CommOptions::timeout_s): a rank that stops answering (its
  // host down, its link cut, its process hung) fails the step after this many seconds.
  double comm_timeout_s = 300;
  int block_size = 16;    // KV block size (tokens)
  int max_model_len = 0;  // 0: the model's context_length
  // KV cache size: blocks = max(kv_cache_bytes / bytes per block, what max_num_seqs
  // sequences of max_model_len need); 0 bytes: enough for max_num_seqs full-length sequences.
  double kv_cache_bytes = 0;
  int max_num_seqs = 8;
  // Copy the Q4_1 / Q8_0 matrices into 16-row panels for the AVX-512 VNNI kernels
  // (LlamaWeights::bind): ~1.5x the decode tokens per second where the CPU has them, the same
  // results (llama.cpp's float operations either way). Ignored (GGUF layout) on other CPUs:
  // see repacked(). The CLI packs unless --no-repack.
  bool repack = false;
};

// The KV blocks a backend of these options allocates for a model of `context_length` tokens
// when kv_cache_bytes asks for no more: max_num_seqs sequences of max_model_len (0: the
// model's context) tokens, in blocks of block_size.
std::int64_t default_kv_blocks(const RealBackendOptions& o, int context_length);

class RealBackend {
 public:
  static Result<std::unique_ptr<RealBackend>> open(const RealBackendOptions& opts);
  virtual ~RealBackend() = default;

  virtual bool is_leader() const = 0;  // rank 0
  virtual const Tokenizer& tokenizer() const = 0;
  virtual const GgufFile& file() const = 0;
  // The model as the engine and the cost model see it (layers, hidden, heads, ...).
  virtual const model::ModelSpec& model_spec() const = 0;
  virtual int context_length() const = 0;
  virtual int num_kv_blocks() const = 0;
  virtual int block_size() const = 0;
  // Whether this rank's matrices were repacked (RealBackendOptions::repack on a CPU with the
  // packed kernels).
  virtual bool repacked() const = 0;

  // Leader: binds the executor to the engine's runtime (completions are posted to it).
  virtual Executor* executor(Runtime* rt) = 0;
  // Other ranks: executes steps until the leader calls shutdown(); returns its status.
  virtual Status run_worker() = 0;
  // Leader, any thread: bytes this rank sent to / received from each rank of the job so far
  // (index = rank; empty without mpirun).
  virtual std::vector<std::uint64_t> bytes_sent() const = 0;
  virtual std::vector<std::uint64_t> bytes_received() const = 0;
  // Leader, any thread: not ok once a step failed on the ranks (RealExecutor::failure): the
  // replica cannot serve again without a restart of the job.
  virtual Status failure() const = 0;
  // Leader: tells the workers to exit (idempotent); called by the destructor too.
  virtual void shutdown() = 0;
};

}  // namespace prima::real
