// Writes one element past a device allocation from a kernel, on purpose: built under
// AddressSanitizer, its run must report the heap-buffer-overflow at this file's kernel line
// (ctest cuda_emu.asan_reports_out_of_bounds_device_write).
#include <cuda_runtime.h>

#include "kernels/cuda/launch.h"

namespace {

__global__ void write_past_end(float* y, int n) {
  const int i = int(blockIdx.x * blockDim.x + threadIdx.x);
  if (i <= n) y[i] = 1.0f;  // the bug: <= instead of <
}

}  // namespace

int main() {
  const int n = 100;
  float* y = nullptr;
  if (cudaMalloc(reinterpret_cast<void**>(&y), n * sizeof(float)) != cudaSuccess) return 2;
  PRIMA_LAUNCH(write_past_end, 1, 128, 0, nullptr, y, n);
  cudaDeviceSynchronize();
  cudaFree(y);
  return 0;
}
