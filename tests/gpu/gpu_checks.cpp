// The list of device checks, whether a device is there to run them, and the JSON string
// literal of the summaries (gpu_checks.h).
#include "tests/gpu/gpu_checks.h"

#include <cstdio>

#include "kernels/cuda/device_info.h"

namespace prima::gpu_checks {

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += c;
    }
  }
  return o + "\"";
}

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
    add_int8_checks(&v);
    add_w4a16_checks(&v);
    add_forward_checks(&v);
    add_sample_checks(&v);
    add_synthetic_checks(&v);
    return v;
  }();
  return checks;
}

}  // namespace prima::gpu_checks
