// DeviceForward: LlamaForward's forward pass (llama_forward.h) on a CUDA device, for one rank's
// shard: the same steps (mixed prefill chunks and decodes of several sequences) in the same
// order of operations, on kernels/cuda's kernels: embedding lookup; per layer RMSNorm, the
// activations quantized as kernels/cpu quantizes them (Q8_1 for Q4_1 weights, Q8_0 for Q4_0
// and Q8_0) and the Q/K/V products, RoPE at each token's position, K/V written into the paged
// cache at the sequence's block table, paged causal grouped-query attention, the output
// product and residual, then the FFN (gate, up, SwiGLU, down); the final norm and the LM head
// only for the rows that sample. The weights are uploaded once (DeviceWeights) and the KV cache
// is one device allocation of num_blocks blocks, indexed by the engine's block ids. Logits are
// copied back to the host, where the sampler runs (RankRunner, through StepForward). TP1 only
// for now: a shard with tp > 1 is refused. Owned and called by one worker thread (not
// thread-safe).
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <vector>

#include "backends/real/cuda/device_buffer.h"
#include "backends/real/cuda/device_weights.h"
#include "backends/real/llama_weights.h"
#include "backends/real/step_codec.h"
#include "backends/real/step_forward.h"
#include "kernels/cpu/attention.h"

namespace prima::real::cuda {

class DeviceForward final : public StepForward {
 public:
  // Uploads `w` to the current device and reserves the KV cache; `w` must outlive the result.
  static Result<std::unique_ptr<DeviceForward>> create(const LlamaWeights& w, int num_blocks,
                                                       int block_size);
  ~DeviceForward() override;
  DeviceForward(const DeviceForward&) = delete;
  DeviceForward& operator=(const DeviceForward&) = delete;

  // check_step, then the step: logits (sampled_rows x vocab) of the last token of each
  // sampling sequence. A CUDA error fails the step with a status naming the call.
  Status forward(const StepInput& s, std::vector<float>* logits) override;
  std::string device() const override { return device_; }

  std::size_t weight_bytes() const { return weights_->bytes(); }
  std::size_t kv_bytes() const { return kv_.bytes(); }

 private:
  friend Result<std::unique_ptr<StepForward>> make_step_forward(const LlamaWeights& w,
                                                                int num_blocks, int block_size,
                                                                int device);
  DeviceForward(const LlamaWeights& w, int num_blocks, int block_size);
  Status upload_step(const StepInput& s);
  Status layer(int l, std::int64_t T);
  // y (T x m.rows) = x (T x m.cols) W^T, x quantized first.
  Status matmul(const DeviceMatrix& m, const float* x, std::int64_t T, float* y, const char* what);
  Status head(const StepInput& s, std::vector<float>* logits);
  kernels::KvLayer kv_layer(int l) const;

  const LlamaWeights& w_;
  const int num_blocks_, block_size_;
  std::string device_;
  cudaStream_t stream_ = nullptr;
  std::unique_ptr<DeviceWeights> weights_;
  DeviceBuffer kv_;
  // The step's per-token arrays (ids, positions, KV slots, block-table offsets, context
  // lengths), the block tables, and the activations.
  DeviceBuffer ids_, pos_, slots_, table_off_, ctx_, tables_, rows_;
  DeviceBuffer x_, h_, q_, k_, v_, att_, o_, g_, u_, xq_, scores_, logits_;
  std::int64_t max_ctx_ = 0;
};

// The current device's forward pass for `w` as a StepForward, its device() naming the device
// (cudaGetDeviceProperties); `device` is the index to use (cudaSetDevice).
Result<std::unique_ptr<StepForward>> make_step_forward(const LlamaWeights& w, int num_blocks,
                                                       int block_size, int device);

}  // namespace prima::real::cuda
