// The CUDA runtime's device count and names (see device_info.h).
#include "kernels/cuda/device_info.h"

#include <cuda_runtime_api.h>

#include <cstdio>

namespace prima::cuda {

DeviceCount device_count() {
  DeviceCount d;
  const cudaError_t err = cudaGetDeviceCount(&d.count);
  if (err != cudaSuccess) {
    d.count = 0;
    d.error = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
  }
  return d;
}

std::string device_name(int index) {
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, index) != cudaSuccess) return "";
  char buf[512];
  std::snprintf(buf, sizeof buf, "%s (sm_%d%d, %zu GiB)", p.name, p.major, p.minor,
                p.totalGlobalMem >> 30);
  return buf;
}

}  // namespace prima::cuda
