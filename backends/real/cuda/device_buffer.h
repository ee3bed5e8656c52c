// Device memory for the GPU forward pass: a buffer that frees itself, grows on demand, and
// copies host vectors in; and PRIMA_CUDA_OK, which turns a CUDA error into a Status naming
// the call ("CUDA: matmul_q8 (layer 3 wq): out of memory"). Not thread-safe.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "engine/core/status.h"

namespace prima::real::cuda {

inline Status cuda_status(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return ok_status();
  return internal_error("CUDA: " + what + ": " + cudaGetErrorString(e));
}

#define PRIMA_CUDA_OK(call, what) \
  PRIMA_RETURN_IF_ERROR(::prima::real::cuda::cuda_status((call), (what)))

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  // A failed free (after a device reset) is not left as the next launch's "last error".
  ~DeviceBuffer() {
    if (p_ && cudaFree(p_) != cudaSuccess) cudaGetLastError();
  }
  DeviceBuffer(DeviceBuffer&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    std::swap(p_, o.p_);
    std::swap(bytes_, o.bytes_);
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // At least `bytes` (contents not kept when it grows).
  Status reserve(std::size_t bytes, const std::string& what) {
    if (bytes <= bytes_) return ok_status();
    if (p_ && cudaFree(p_) != cudaSuccess) cudaGetLastError();
    p_ = nullptr;
    bytes_ = 0;
    PRIMA_CUDA_OK(cudaMalloc(&p_, bytes ? bytes : 1),
                  "cudaMalloc " + std::to_string(bytes) + " bytes for " + what);
    bytes_ = bytes;
    return ok_status();
  }
  // Holds exactly the host bytes [src, src + bytes) after the call (on `stream`).
  Status upload(const void* src, std::size_t bytes, cudaStream_t stream, const std::string& what) {
    PRIMA_RETURN_IF_ERROR(reserve(bytes, what));
    return cuda_status(cudaMemcpyAsync(p_, src, bytes, cudaMemcpyHostToDevice, stream),
                       "copy of " + what);
  }
  template <typename T>
  Status upload(const std::vector<T>& v, cudaStream_t stream, const std::string& what) {
    return upload(v.data(), v.size() * sizeof(T), stream, what);
  }

  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace prima::real::cuda
