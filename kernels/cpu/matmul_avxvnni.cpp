// AVX2 matmul tile kernels with AVX-VNNI 8-bit dot products (Q4_0, Q4_1, Q8_0; see
// matmul_x86_impl.h). The target is set here by pragma (this file is not built with -mavx2);
// only called after the run-time CPU check. Stateless; thread-safe.
#pragma GCC target("avx2,fma,f16c,avxvnni")
#define PRIMA_X86_VNNI 1
#include "kernels/cpu/matmul_x86_impl.h"

namespace prima::kernels::detail {

const MatmulKernels* avxvnni_kernels() {
  // Reported as "avx2": the same kernels, with the VNNI product instruction.
  static const MatmulKernels k = make_x86_kernels("avx2");
  return &k;
}

}  // namespace prima::kernels::detail
