// Which device the real backend's forward pass runs on (`--device cpu|cuda[:N]`), parsed, and
// whether this build and this machine can run it. Today only the CPU runs the forward pass:
// for cuda, check_device() says why not, in one line — "no CUDA build" (prima built without
// the CUDA kernels), "no CUDA device" (none visible: cudaGetDeviceCount gives 0 or fails),
// "device index N out of range (M devices)", or, where the device exists, that the CUDA
// forward pass is not built yet. Plain values and functions; thread-safe.
#pragma once

#include <string>
#include <string_view>

#include "engine/core/status.h"

namespace prima::real {

enum class DeviceKind { kCpu, kCuda };

struct DeviceSpec {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;  // cuda:N; 0 for cpu and plain "cuda"
};

// "cpu", "cuda" (device 0) or "cuda:N" (N a decimal index from 0); invalid_argument naming
// the text and the valid forms otherwise.
Result<DeviceSpec> parse_device(std::string_view text);
std::string to_string(const DeviceSpec& d);  // "cpu", "cuda:0"

// True where prima was built with the CUDA kernels (PRIMA_CUDA found nvcc).
bool cuda_built();

// ok for the CPU. For CUDA, failed_precondition with the one-line reason (above).
Status check_device(const DeviceSpec& d);

}  // namespace prima::real
