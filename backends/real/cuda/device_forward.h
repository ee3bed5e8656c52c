// DeviceForward: LlamaForward's forward pass (llama_forward.h) on a CUDA device, for one rank's
// shard: the same steps (mixed prefill chunks and decodes of several sequences) in the same
// order of operations, on kernels/cuda's kernels: embedding lookup; per layer RMSNorm, the
// activations quantized as kernels/cpu quantizes them (Q8_1 for Q4_1 weights, Q8_0 for Q4_0
// and Q8_0, and rounded to F16/BF16 for F16/BF16 weights, whose products are the dense GEMM's:
// cuBLASLt on devices, the reference kernel on the CPU layer) and the Q/K/V products, RoPE at each
// token's position, K/V written into the paged cache at the sequence's block table, paged causal
// grouped-query attention, the output product and residual, then the FFN (gate, up, SwiGLU, down);
// the final norm and the LM head only for the rows that sample. Fused where it saves a pass: the
// residual add into the next RMSNorm, RoPE of Q and K in one launch, the activations quantized
// once for Q, K and V and once for gate and up (device_forward_matmul.cpp), one final norm per
// run of consecutive logit rows. The weights are uploaded once
// (DeviceWeights) and the KV cache is one device allocation of num_blocks blocks, indexed by the
// engine's block ids, plus one block that padded rows write to. The device samples the rows it
// can as the host's sampler would (sample_rows: logit processing, greedy, temperature, top-k,
// top-p, min-p, log-probabilities; device_sampling.h) and scores prompt rows; the others' logits
// are copied back to the host, where RankRunner samples them. A single rank's decode steps (one
// token per sequence, up to 64 sequences) run as CUDA graphs, one per batch bucket 1, 2, 4, ..., 64
// (the step padded to it), captured the second time a bucket is seen (device_forward_graphs.cpp).
// Tensor and pipeline parallelism, one process per GPU, as LlamaForward does them: a TP rank
// computes its heads, its FFN columns and its rows of Wo and Wd, and the stage gathers the
// attention output, the SwiGLU output and the Wo and Wd outputs with an all-gather over its
// DeviceComm and an interleave of the slices (a copy, so every value is the single-device one); a
// stage receives the step's hidden states from the rank with its TP rank in the previous stage and
// sends its own to the next; the last stage's TP rank 0 computes the logits. Owned and called by
// one worker thread (not thread-safe).
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <set>
#include <vector>

#include "backends/real/cuda/device_buffer.h"
#include "backends/real/cuda/device_comm.h"
#include "backends/real/cuda/device_weights.h"
#include "backends/real/llama_weights.h"
#include "backends/real/step_codec.h"
#include "backends/real/step_forward.h"
#include "kernels/cpu/attention.h"
#include "kernels/cuda/gemm.h"

namespace prima::real::cuda {

class DeviceForward final : public StepForward {
 public:
  // The transfers of a rank of a TP x PP job (both null for TP 1, PP 1): tp over the stage's
  // TP group, pp over the replica's ranks (RankLayout ranks).
  struct Parallel {
    RankLayout layout;
    std::unique_ptr<DeviceComm> tp, pp;
  };
  // Uploads `w` to the current device and reserves the KV cache; `w` must outlive the result.
  // `w`'s shard must be par.layout's (its TP degree and rank, its stage's layers). With
  // kFp8 the layers' F16/BF16 matrices run as FP8 E4M3 (DeviceWeights::upload), their
  // activations quantized per tensor each step (fp8_amax, to_fp8) for the FP8 GEMM; with kInt8
  // as INT8 W8A8, their activations quantized per token (quantize_i8_rows), the INT32 products
  // scaled back per token and channel (dequant_i32).
  static Result<std::unique_ptr<DeviceForward>> create(const LlamaWeights& w, int num_blocks,
                                                       int block_size, Parallel par = {},
                                                       WeightQuant quant = WeightQuant::kNone);
  ~DeviceForward() override;
  DeviceForward(const DeviceForward&) = delete;
  DeviceForward& operator=(const DeviceForward&) = delete;

  // check_step, then this rank's share of the step; on the last stage's TP rank 0, logits
  // (logit rows x vocab), elsewhere none. A CUDA or transfer error fails the step with a status
  // naming the call.
  Status forward(const StepInput& s, std::vector<float>* logits) override;
  // The sampling rows device_samples() accepts and every prompt-scoring row finished on the
  // device (sample_rows, device_sampling.h); only the other rows' logits and the answers are
  // copied back.
  Status forward_sampled(const StepInput& s, std::vector<float>* logits,
                         std::vector<DeviceRow>* done) override;
  std::string device() const override { return device_; }
  // Name and memory from cudaGetDeviceProperties; the bandwidth from a device-to-device copy
  // of up to 256 MiB (bytes read and written) (a quarter of the free memory at most) timed by
  // events; the dp4a peak from the SM count and clock; the launch time of a one-element kernel with
  // its sync.
  Result<DeviceFacts> measure_device(int repeats) override;

  std::size_t weight_bytes() const { return weights_->bytes(); }
  // Decode steps run as a CUDA graph so far, and graphs captured (PRIMA_DEVICE_GRAPHS=0: none).
  std::int64_t graph_launches() const { return graph_launches_; }
  std::int64_t graph_captures() const { return graph_captures_; }
  // The nodes (kernel launches, copies) of the last graph captured.
  std::int64_t graph_nodes() const { return graph_nodes_; }
  std::size_t kv_bytes() const { return kv_.bytes(); }

 private:
  friend Result<std::unique_ptr<StepForward>> make_step_forward(const LlamaWeights& w,
                                                                int num_blocks, int block_size,
                                                                int device, const RankJob& job,
                                                                WeightQuant quant);
  DeviceForward(const LlamaWeights& w, int num_blocks, int block_size, Parallel par);
  Status layer(int l, std::int64_t T);
  // y (T x m.rows) = x (T x m.cols) W^T, x quantized first.
  // y = x m^T for T tokens. same_x: x is the previous product's input, unchanged since, so its
  // quantized form is reused when this product takes the same form.
  Status matmul(const DeviceMatrix& m, const float* x, std::int64_t T, float* y, const char* what,
                bool same_x = false);
  Status quantize_x(const DeviceMatrix& m, const float* x, std::int64_t T, const char* what);
  static int activation_kind(const DeviceMatrix& m);
  struct XqKey {  // what xq_ holds: the activations' form and shape
    int kind = 0;
    std::int64_t tokens = 0, cols = 0;
    bool operator==(const XqKey&) const = default;
  };
  XqKey xq_key_;
  Status run(const StepInput& s, std::vector<float>* logits, std::vector<DeviceRow>* done);
  // The step's tokens' ids, positions, KV slots, block-table offsets, context lengths, block
  // tables and attention tiles (each chunk's rows by kAttentionTileRows) to the device; with
  // pad_to > 0 (a graph's bucket), rows up to pad_to that write to the spare block and attend to
  // it alone (a tile each), and the block tables' buffer sized for graph_ctx_.
  Status upload_step(const StepInput& s, int pad_to = 0);
  // The activation buffers for T tokens.
  Status reserve(std::int64_t T);
  // Embedding (or the previous stage's hidden states) through the layers and the last residual.
  Status body(std::int64_t T);
  // The final norm and LM head of hidden rows `rows` into logits_ (rows.size() x vocab).
  Status lm_head(const std::vector<std::int64_t>& rows);
  // The step's logit rows to the host: with `done`, the rows the device samples or scores as
  // their answers, the other rows' logits; waits for the stream.
  Status copy_out(const StepInput& s, int n, std::vector<float>* logits,
                  std::vector<DeviceRow>* done);
  Status head(const StepInput& s, std::vector<float>* logits, std::vector<DeviceRow>* done);
  // Decode graphs (device_forward_graphs.cpp): whether `s` runs as one, and running it.
  bool graphable(const StepInput& s) const;
  Status run_graph(const StepInput& s, std::vector<float>* logits, std::vector<DeviceRow>* done);
  std::vector<const void*> graph_buffers() const;
  // full_ (T x tp * cols) = every TP rank's T x cols slice `local`, in TP-rank order.
  Status gather(const float* local, std::int64_t T, std::int64_t cols, float* full);
  kernels::KvLayer kv_layer(int l) const;

  const LlamaWeights& w_;
  const int num_blocks_, block_size_;
  Parallel par_;
  std::string device_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<DeviceWeights> weights_;
  std::unique_ptr<::prima::cuda::Gemm> gemm_;  // F16/BF16 weights: made on first use
  DeviceBuffer kv_;
  // The step's per-token arrays (ids, positions, KV slots, block-table offsets, context
  // lengths), the block tables, and the activations.
  DeviceBuffer ids_, pos_, slots_, table_off_, ctx_, tables_, rows_;
  DeviceBuffer x_, h_, q_, k_, v_, att_, o_, g_, u_, xq_, logits_;
  DeviceBuffer tiles_;  // the step's attention tiles (first row, rows), n_tiles_ of them
  int n_tiles_ = 0;
  // Prefill chunks of kAttentionMmaTileRows rows or more on tensor cores (paged_attention_mma)
  // where the build has them and PRIMA_DEVICE_MMA_ATTENTION is not 0: their tiles.
  bool mma_attention_ = false;
  DeviceBuffer mma_tiles_;
  int n_mma_tiles_ = 0;
  // TP: a gathered input, a rank's slice of an output, and an all-gather's part-major result.
  DeviceBuffer full_, part_, gathered_;
  DeviceBuffer amax_, xscale_;  // FP8 / INT8 weights: the activations' amax and scale(s)
  DeviceBuffer acc_;            // INT8 weights: the INT32 products
  // forward_sampled: the rows' descriptions, logit biases and penalties, the processed logits,
  // the candidates' weights and the answers (sample_rows).
  DeviceBuffer sample_rows_, sample_biases_, sample_edits_, sample_work_, sample_scratch_,
      sample_out_;
  struct Graph {
    cudaGraphExec_t exec = nullptr;
    std::vector<const void*> buffers;  // the buffers it was captured on
  };
  std::map<int, Graph> graphs_;  // by bucket
  std::set<int> warm_;           // buckets run once without a graph (their buffers sized)
  std::int64_t graph_ctx_ = 0;   // the longest context: the block tables' size inside graphs
  std::int64_t graph_launches_ = 0, graph_captures_ = 0, graph_nodes_ = 0;
};

// The forward pass for `w` on device `device` (cudaSetDevice) as a StepForward, its device()
// naming the device (cudaGetDeviceProperties). For a job of several ranks (job.layout), the
// transfers are NCCL's on devices and host-staged over job.world / job.tp_group on the CPU
// execution layer, or anywhere with PRIMA_DEVICE_COMM=host; device() then names them.
// quant: see create(); kFp8 refused (invalid_argument) on devices before sm_89.
Result<std::unique_ptr<StepForward>> make_step_forward(const LlamaWeights& w, int num_blocks,
                                                       int block_size, int device,
                                                       const RankJob& job, WeightQuant quant);

// ok where device `device` has FP8 tensor cores (sm_89 and later), else invalid_argument naming
// the device and its sm: what --quantization fp8 checks before anything is loaded or made.
Status check_fp8(int device);

}  // namespace prima::real::cuda
