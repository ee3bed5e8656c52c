// The list of device checks and whether a device is there to run them (gpu_checks.h).
#include "tests/gpu/gpu_checks.h"

#include "kernels/cuda/device_info.h"

namespace prima::gpu_checks {

std::string unavailable_reason() {
  const cuda::DeviceCount d = cuda::device_count();
  if (d.count > 0) return "";
  return d.error.empty() ? "no CUDA device" : "no CUDA device (" + d.error + ")";
}

const std::vector<Check>& all_checks() {
  static const std::vector<Check> checks = [] {
    std::vector<Check> v;
    add_ops_checks(&v);
    add_gemm_checks(&v);
    add_fp8_checks(&v);
    add_forward_checks(&v);
    return v;
  }();
  return checks;
}

}  // namespace prima::gpu_checks
