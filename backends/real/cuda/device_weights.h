// One rank's Llama weights in device memory for the GPU forward pass: each matrix of the shard
// (LlamaWeights' views, already sliced for tensor parallelism) copied once in its GGUF block
// layout, the norms as floats; a matrix bound twice (the tied LM head) is copied once. Only
// the types the device products take are accepted (Q4_0, Q4_1, Q8_0: the quantized matmul;
// F16, BF16: the dense GEMM); the error names the tensor and its type. A synthetic model whose
// weights are made on the device (synthetic_model.h) has each matrix made in place by
// kernels/cuda's synthetic_rows instead of copied: the file's bits, nothing read from it.
// Immutable after upload(); owned by the rank's worker.
#pragma once

#include <cuda_runtime_api.h>

#include <map>
#include <memory>
#include <vector>

#include "backends/real/cuda/device_buffer.h"
#include "backends/real/cuda/weight_quant.h"
#include "backends/real/llama_weights.h"
#include "backends/real/synthetic_model.h"

namespace prima::real::cuda {

struct DeviceMatrix {
  kernels::DType type = kernels::DType::kF32;  // the file's type
  const void* data = nullptr;                  // device
  std::int64_t rows = 0, cols = 0;
  std::int64_t row_bytes = 0;
  // FP8 E4M3 weights (upload's fp8): data holds one code per element (row_bytes = cols), the
  // file's F16/BF16 values divided by *scale (device), the tensor's amax / 448.
  bool fp8 = false;
  // INT8 W8A8 weights (upload's kInt8): one signed code per element (row_bytes = cols), row r
  // the file's values divided by scale[r] (device, rows floats), its amax / 127.
  bool int8 = false;
  const float* scale = nullptr;
  // W4A16 weights (upload's kW4A16): data holds two 4-bit codes a byte (row_bytes = cols / 2),
  // dm an f16 scale and minimum per group of `group` elements of a row (kernels.h
  // quantize_w4_rows).
  bool w4 = false;
  int group = 0;
  const std::uint16_t* dm = nullptr;
};

struct DeviceLayer {
  const float* attn_norm = nullptr;
  const float* ffn_norm = nullptr;
  DeviceMatrix wq, wk, wv, wo, gate, up, down;
};

class DeviceWeights {
 public:
  // The bytes upload() will place on the device for `w` (quantized, the largest F16/BF16
  // layer matrix's bytes more: its staging copy).
  static std::size_t bytes_needed(const LlamaWeights& w, WeightQuant quant = WeightQuant::kNone);
  // Copies `w` to the current device. With kFp8, the layers' F16 and BF16 matrices become FP8
  // E4M3 with a per-tensor scale; with kInt8, INT8 codes with a scale per row (output channel);
  // with kW4A16, 4-bit codes with an f16 scale and minimum per group of a row;
  // quantized on the device (the embedding and the LM head stay as they are, as vLLM's FP8 and
  // W8A8 keep them). Fails (naming it) on an unsupported tensor type,
  // or when the device's free memory is short (saying how much is needed and free).
  static Result<std::unique_ptr<DeviceWeights>> upload(const LlamaWeights& w, cudaStream_t stream,
                                                       WeightQuant quant = WeightQuant::kNone);

  const DeviceLayer& layer(int i) const { return layers_[std::size_t(i)]; }
  const DeviceMatrix& token_embd() const { return token_embd_; }
  const DeviceMatrix& output() const { return output_; }
  const float* output_norm() const { return output_norm_; }
  std::size_t bytes() const { return bytes_; }
  // Whether the matrices were made on the device (a synthetic model's device weights).
  bool made_on_device() const { return synth_.has_value(); }

 private:
  DeviceWeights() = default;
  Result<DeviceMatrix> matrix(const kernels::WeightView& v, const char* name, cudaStream_t stream,
                              WeightQuant quant = WeightQuant::kNone);
  Result<const float*> vector(const float* host, std::int64_t n, cudaStream_t stream);
  // dst = the matrix `v` in its file's layout: copied from the mapping, or made on the device.
  Status fill(const kernels::WeightView& v, DeviceBuffer& dst, cudaStream_t stream,
              const char* name);

  const GgufFile* file_ = nullptr;
  std::optional<SyntheticSpec> synth_;  // the matrices are made on the device from this
  std::vector<DeviceLayer> layers_;
  DeviceMatrix token_embd_, output_;
  const float* output_norm_ = nullptr;
  std::map<const void*, DeviceBuffer> copies_;  // by host address: each tensor once
  std::map<const void*, DeviceBuffer> scales_;  // quantized matrices' scales, by host address
  DeviceBuffer staging_, amax_;  // quantizing: a matrix's F16/BF16 values, its FP8 amax
  std::size_t bytes_ = 0;
};

}  // namespace prima::real::cuda
