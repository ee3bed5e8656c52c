// The dense GEMM of the linear layers behind one interface: Y = alpha * X W^T in the row-major
// shapes of kernels/cpu/matmul.h (X is m x k, m tokens; W is n x k, n output features, the
// GGUF layout; Y is m x n), inputs FP16 or BF16 (or F32 for the reference), or FP8 E4M3 with a
// per-tensor scale each (x_scale, w_scale: device floats; Y = alpha * x_scale * w_scale * the
// codes' product, cuBLASLt's A/B scale pointers; sm_89 and later on devices), accumulation in
// float, Y in the inputs' type or float (FP8: F32, F16 or BF16); or INT8 inputs with exact INT32
// products (alpha 1, k a multiple of 4: cuBLASLt's INT8 rules; the scales are applied after,
// dequant_i32). Two implementations:
//   LtGemm (gemm_lt.h)      cuBLASLt, on devices;
//   ReferenceGemm (here)    one plain kernel (gemm_ref.cu), the same on devices and on the CPU
//                           execution layer, where it is what make_gemm() gives.
// Ownership: a Gemm is created once per device and thread and used with one stream at a time.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <string>

namespace prima::cuda {

enum class GemmType { kF16, kBF16, kF32, kFP8E4M3, kI8, kI32 };

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  GemmType in = GemmType::kF16;    // X and W
  GemmType out = GemmType::kF32;   // Y: the inputs' type or kF32
  float alpha = 1.0f;              // the epilogue's scale (a dequantization scale, 1/sqrt(d))
  const float* x_scale = nullptr;  // FP8 inputs: the per-tensor scales (device)
  const float* w_scale = nullptr;
};

class Gemm {
 public:
  virtual ~Gemm() = default;
  // y = alpha * x w^T on `stream` (device pointers): "" when queued, else why not.
  virtual std::string run(const GemmShape& s, const void* x, const void* w, void* y,
                          cudaStream_t stream) = 0;
  virtual const char* name() const = 0;
};

// "" when `s` is a shape and type pair every implementation takes, else why not.
std::string check_shape(const GemmShape& s, bool allow_f32_inputs);

class ReferenceGemm final : public Gemm {
 public:
  std::string run(const GemmShape& s, const void* x, const void* w, void* y,
                  cudaStream_t stream) override;
  const char* name() const override { return "reference"; }
};

// The build's GEMM: cuBLASLt where the kernels are compiled by nvcc, the reference kernel on
// the CPU execution layer. Null with *error set when it cannot be created.
std::unique_ptr<Gemm> make_gemm(std::string* error);

}  // namespace prima::cuda
