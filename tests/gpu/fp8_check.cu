// Device check of kernels/cuda/fp8_e4m3.h: the same header compiled for the device decodes
// all 256 codes and encodes a sweep of floats to the host's bits, and agrees with cuda_fp8.h's
// own conversion (__NV_SATFINITE, E4M3).
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/fp8_e4m3.h"
#include "kernels/cuda/launch.h"
#include "tests/gpu/check_support.h"

namespace prima::gpu_checks {

namespace {

constexpr int kSweep = 1 << 16;

// The sweep's i-th float: magnitudes from 2^-12 to past 448, both signs, midpoints included.
__host__ __device__ float sweep_value(int i) {
  const float mag = ldexpf(1.0f + float(i % 1024) / 1024.0f, (i / 1024) % 24 - 12);
  return (i / (1024 * 24)) % 2 ? -mag : mag;
}

__global__ void fp8_kernel(float* decoded, std::uint8_t* mine, std::uint8_t* nv) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 256) decoded[i] = cuda::fp8_e4m3_decode(std::uint8_t(i));
  if (i < kSweep) {
    const float x = sweep_value(i);
    mine[i] = cuda::fp8_e4m3_encode(x);
    nv[i] = std::uint8_t(__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3));
  }
}

CheckResult fp8() {
  DeviceBuffer dd(256 * sizeof(float)), dm(kSweep), dn(kSweep);
  PRIMA_LAUNCH(fp8_kernel, kSweep / 256, 256, 0, nullptr, dd.as<float>(), dm.as<std::uint8_t>(),
               dn.as<std::uint8_t>());
  finish(cudaGetLastError(), "fp8_kernel");
  const auto decoded = dd.read<float>(256);
  const auto mine = dm.read<std::uint8_t>(kSweep), nv = dn.read<std::uint8_t>(kSweep);
  for (int c = 0; c < 256; ++c) {
    const float h = cuda::fp8_e4m3_decode(std::uint8_t(c));
    if (!(h == decoded[c] || (std::isnan(h) && std::isnan(decoded[c]))))
      return {false, 1e9, "decode of code " + std::to_string(c) + " differs from the host's"};
  }
  for (int i = 0; i < kSweep; ++i) {
    const float x = sweep_value(i);
    if (mine[i] != cuda::fp8_e4m3_encode(x))
      return {false, 1e9, "encode of " + std::to_string(x) + " differs from the host's"};
    if (mine[i] != nv[i])
      return {false, 1e9,
              "encode of " + std::to_string(x) + " gives " + std::to_string(mine[i]) +
                  ", __nv_cvt_float_to_fp8 " + std::to_string(nv[i])};
  }
  return {true, 0, "E4M3: 256 decodes and 65536 encodes equal the host's and cuda_fp8.h's"};
}

}  // namespace

void add_fp8_checks(std::vector<Check>* out) {
  out->push_back({"fp8_e4m3", fp8});
}

}  // namespace prima::gpu_checks
