// The GEMM of gemm.h on cuBLASLt for FP16 and BF16 inputs, the scale as cuBLASLt's alpha.
// cuBLASLt is column-major, so the product is asked as Y^T (n x m) = W (k x n, transposed) *
// X^T (k x m).
//
// Ownership: an LtGemm owns its cuBLASLt handle and a device workspace; create it once per
// device and thread. Not thread-safe (one stream at a time); movable, not copyable.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "kernels/cuda/gemm.h"

namespace prima::cuda {

class LtGemm final : public Gemm {
 public:
  // An empty wrapper; init() creates the handle and workspace on the current device.
  LtGemm() = default;
  ~LtGemm() override;
  LtGemm(LtGemm&& o) noexcept;
  LtGemm& operator=(LtGemm&& o) noexcept;
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // "" on success, else what failed (a cuBLASLt or CUDA call and its status).
  std::string init(std::size_t workspace_bytes = std::size_t(32) << 20);

  // y = x w^T on `stream` (device pointers); "" when queued, else why not (an unsupported
  // type pair, no algorithm for the shape, a cuBLASLt error).
  std::string run(const GemmShape& s, const void* x, const void* w, void* y,
                  cudaStream_t stream) override;
  const char* name() const override { return "cuBLASLt"; }

 private:
  void release();
  void* handle_ = nullptr;  // cublasLtHandle_t
  void* workspace_ = nullptr;
  std::size_t workspace_bytes_ = 0;
};

}  // namespace prima::cuda
