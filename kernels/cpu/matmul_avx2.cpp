// AVX2/FMA/F16C matmul tile kernels (Q4_0, Q4_1, Q8_0; see matmul_x86_impl.h). Compiled with
// -mavx2 -mfma -mf16c; only called after the run-time CPU check. Stateless; thread-safe.
#define PRIMA_X86_VNNI 0
#include "kernels/cpu/matmul_x86_impl.h"

namespace prima::kernels::detail {

const MatmulKernels* avx2_kernels() {
  static const MatmulKernels k = make_x86_kernels("avx2");
  return &k;
}

}  // namespace prima::kernels::detail
