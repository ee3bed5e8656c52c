// RealBackend: everything `prima generate`, `prima profile` and `prima serve --backend real`
// need to run a GGUF model through the engine: the model file (mmap), the tokenizer, the
// communicators (TP x PP ranks per replica under mpirun, replicas of them in one job), the KV
// cache and an Executor per replica.
//
// On job rank 0 (the leader) executor(rt, r) is what the engine's Replica r drives (replica
// 0 on this process's ranks, the others through a relay to their leader): launch() copies the
// step's inputs (token ids from Sequence::token_at, block tables, sampling parameters) on the
// loop, runs the forward pass on the backend's worker thread (kernels on its ThreadPool; TP
// all-reduces and PP activations over the communicator with the other ranks) and posts the
// StepResult (sampled ids in StepResult::tokens) back to the loop. Other ranks call
// run_worker(), which executes the leader's steps (a replica's leader: job rank 0's, through
// the relay) until it shuts down.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "engine/core/status.h"
#include "engine/model/model_spec.h"
#include "engine/runtime.h"

namespace prima::real {

class Tokenizer;
class GgufFile;
class LlamaWeights;
class StepForward;
struct RankJob;

struct RealBackendOptions {
  std::string model_path;
  std::string manifest;  // GgufOpenOptions::manifest
  int threads = 0;       // kernel threads per rank (0: hardware concurrency)
  int tp = 1, pp = 1;    // ranks of one replica
  // Replicas of TP x PP ranks each in one mpirun job (replicas * tp * pp == ranks launched):
  // job rank 0 runs the engine, which routes over all of them (JobComms, replica_relay.h).
  int replicas = 1;
  // Longest wait for another rank (CommOptions::timeout_s): a rank that stops answering (its
  // host down, its link cut, its process hung) fails the step after this many seconds.
  double comm_timeout_s = 300;
  int block_size = 16;    // KV block size (tokens)
  int max_model_len = 0;  // 0: the model's context_length
  // KV cache size: blocks = max(kv_cache_bytes / bytes per block, what max_num_seqs
  // sequences of max_model_len need); 0 bytes: enough for max_num_seqs full-length sequences.
  double kv_cache_bytes = 0;
  int max_num_seqs = 8;
  // Tokens one engine step computes at most (prefill chunks and decodes); 0: the scheduler's
  // default (SchedulerOptions::max_num_batched_tokens).
  int max_num_batched_tokens = 0;
  // Copy the Q4_1 / Q8_0 matrices into 16-row panels for the AVX-512 VNNI kernels
  // (LlamaWeights::bind): ~1.5x the decode tokens per second where the CPU has them, the same
  // results (llama.cpp's float operations either way). Ignored (GGUF layout) on other CPUs:
  // see repacked(). The CLI packs unless --no-repack.
  bool repack = false;
  // Makes the forward pass that runs the rank's share of the steps instead of the CPU layers
  // (the GPU forward pass of --device cuda), from the rank's weights, the KV cache's blocks
  // and block size, and the rank's place in the job with its communicators; empty: the CPU
  // path. Its failure fails init().
  std::function<Result<std::unique_ptr<StepForward>>(const LlamaWeights&, int, int, const RankJob&)>
      device_forward;
};

// The KV blocks a backend of these options allocates for a model of `context_length` tokens
// when kv_cache_bytes asks for no more: max_num_seqs sequences of max_model_len (0: the
// model's context) tokens, in blocks of block_size.
std::int64_t default_kv_blocks(const RealBackendOptions& o, int context_length);

// How long job rank 0 waits for another replica's leader over the relay: three times the
// replica's own --comm-timeout, so that a leader that lost one of its ranks (detected within
// one or two of its timeouts) reports that cause itself before the relay times out.
double relay_timeout_s(double comm_timeout_s);

class RealBackend {
 public:
  static Result<std::unique_ptr<RealBackend>> open(const RealBackendOptions& opts);
  virtual ~RealBackend() = default;

  virtual bool is_leader() const = 0;  // job rank 0
  virtual int replicas() const = 0;
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

  // Leader: replica r's executor, bound to the engine's runtime (completions are posted to
  // it; every replica's executor must get the same runtime).
  virtual Executor* executor(Runtime* rt, int replica = 0) = 0;
  // Other ranks: executes steps until the leader calls shutdown(); returns its status.
  virtual Status run_worker() = 0;
  // Leader, any thread: bytes this rank sent to / received from each rank of the job so far
  // (index = job rank; size 1 without mpirun).
  virtual std::vector<std::uint64_t> bytes_sent() const = 0;
  virtual std::vector<std::uint64_t> bytes_received() const = 0;
  // Leader, any thread: not ok once a step failed on replica r's ranks
  // (RealExecutor::failure): that replica cannot serve again without a restart of the job.
  virtual Status failure(int replica = 0) const = 0;
  // Leader, any thread: the first replica's failure (ok while every replica serves).
  Status any_failure() const;
  // Leader, any thread: ok while some replica serves, else the last replica's failure.
  Status all_failed() const;
  // Leader: tells the workers to exit (idempotent); called by the destructor too.
  virtual void shutdown() = 0;
};

}  // namespace prima::real
