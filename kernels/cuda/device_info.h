// How many CUDA devices this process sees, for the run-time checks of `--device cuda[:N]`
// (backends/real/device.h). A plain header: callers need no CUDA include. With no driver or
// no GPU, cudaGetDeviceCount fails (error 35, insufficient driver, where only the toolkit is
// installed) or gives 0; both mean "no CUDA device". Thread-safe.
#pragma once

#include <string>

namespace prima::cuda {

struct DeviceCount {
  int count = 0;      // 0 when none or the query failed
  std::string error;  // "" or why the query failed ("cudaGetDeviceCount: ...")
};

DeviceCount device_count();

// "NVIDIA H100 80GB HBM3 (sm_90, 79 GiB)" for device `index`, or "" when it cannot be read.
std::string device_name(int index);

}  // namespace prima::cuda
