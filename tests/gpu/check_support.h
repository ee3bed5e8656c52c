// Helpers of the device checks (tests/gpu): a device buffer that frees itself, copies in and
// out, and the comparison of a device result with a CPU reference under a tolerance. Not
// thread-safe; the current device.
#pragma once

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/gpu/gpu_checks.h"

namespace prima::gpu_checks {

// Throws std::runtime_error("what: CUDA error text") on failure; the runners catch it.
inline void cuda_ok(cudaError_t err, const char* what) {
  if (err != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(err));
}

class DeviceBuffer {
 public:
  explicit DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
    cuda_ok(cudaMalloc(&p_, bytes), "cudaMalloc");
  }
  template <typename T>
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size() * sizeof(T)) {
    cuda_ok(cudaMemcpy(p_, host.data(), bytes_, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  ~DeviceBuffer() { cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  template <typename T>
  std::vector<T> read(std::size_t n) const {
    std::vector<T> v(n);
    cuda_ok(cudaMemcpy(v.data(), p_, n * sizeof(T), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
    return v;
  }

 private:
  void* p_ = nullptr;
  std::size_t bytes_;
};

// Waits for the device and turns a launch or kernel error into an exception.
inline void finish(cudaError_t launch, const char* what) {
  cuda_ok(launch, what);
  cuda_ok(cudaDeviceSynchronize(), what);
}

// ok when |got[i] - want[i]| <= tol[i] for every i; max_err is the largest ratio err / tol.
inline CheckResult compare(const std::vector<float>& got, const std::vector<double>& want,
                           const std::vector<double>& tol, const std::string& what) {
  CheckResult r;
  r.ok = got.size() == want.size();
  std::size_t worst = 0;
  for (std::size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double err = std::fabs(double(got[i]) - want[i]);
    const double ratio = err == 0 ? 0 : err / tol[i];
    if (!(ratio <= 1.0)) r.ok = false;
    if (!(ratio <= r.max_err)) {
      r.max_err = ratio;
      worst = i;
    }
  }
  r.detail = what;
  if (!r.ok && worst < got.size())
    r.detail += ": element " + std::to_string(worst) + " is " + std::to_string(got[worst]) +
                ", the CPU's " + std::to_string(want[worst]) + " (tolerance " +
                std::to_string(tol[worst]) + ")";
  return r;
}

}  // namespace prima::gpu_checks
