// The one macro that lets a header's math compile with both nvcc and the host C++ compiler:
// PRIMA_HD marks a function `__host__ __device__` under nvcc and nothing elsewhere, and
// prima::cuda::float_bits / bits_float reinterpret a float's bits on either side. Header only;
// no state.
#pragma once

#include <cstdint>
#if !defined(__CUDA_ARCH__)
#include <cstring>
#endif

#if defined(__CUDACC__)
#define PRIMA_HD __host__ __device__ __forceinline__
#else
#define PRIMA_HD inline
#endif

namespace prima::cuda {

PRIMA_HD std::uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  std::uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
#endif
}

PRIMA_HD float bits_float(std::uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, 4);
  return f;
#endif
}

}  // namespace prima::cuda
