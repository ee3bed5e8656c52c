// A plain GEMM on cuBLASLt for FP16 and BF16 inputs (no epilogue): the linear layer of a batch
// of tokens, Y = X W^T, in the row-major shapes of kernels/cpu/matmul.h: X is m x k (m
// tokens), W is n x k (n output features, the GGUF layout), Y is m x n. Accumulation in
// float; Y in the inputs' type or float. cuBLASLt is column-major, so the product is asked as
// Y^T (n x m) = W (k x n, transposed) * X^T (k x m).
//
// Ownership: an LtGemm owns its cuBLASLt handle and a device workspace; create it once per
// device and thread. Not thread-safe (one stream at a time); movable, not copyable.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace prima::cuda {

enum class GemmType { kF16, kBF16, kF32 };

struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  GemmType in = GemmType::kF16;   // X and W: kF16 or kBF16
  GemmType out = GemmType::kF32;  // Y: the inputs' type or kF32
};

class LtGemm {
 public:
  // An empty wrapper; init() creates the handle and workspace on the current device.
  LtGemm() = default;
  ~LtGemm();
  LtGemm(LtGemm&& o) noexcept;
  LtGemm& operator=(LtGemm&& o) noexcept;
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // "" on success, else what failed (a cuBLASLt or CUDA call and its status).
  std::string init(std::size_t workspace_bytes = std::size_t(32) << 20);

  // y = x w^T on `stream` (device pointers); "" when queued, else why not (an unsupported
  // type pair, no algorithm for the shape, a cuBLASLt error).
  std::string run(const GemmShape& s, const void* x, const void* w, void* y, cudaStream_t stream);

 private:
  void release();
  void* handle_ = nullptr;  // cublasLtHandle_t
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
};

}  // namespace prima::cuda
