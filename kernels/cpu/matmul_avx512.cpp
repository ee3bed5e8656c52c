// x86 matmul tile kernels with AVX-512 VNNI in the 8-token kernel (two tokens per 512-bit
// register; see micro8_zmm in matmul_x86_impl.h) and its 256-bit (EVEX) form elsewhere: no
// AVX-VNNI needed. Results are bit for bit those of the AVX2 / AVX-VNNI kernels (same integer
// sums, same float operations per token). Also the packed-weight kernels (packed.h). The target is
// set here by pragma; only called after the run-time CPU check. Stateless; thread-safe.
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512vl,avx512dq,avx512vnni")
// GCC 12's AVX-512 intrinsics build their "undefined" pass-through operands from
// self-initialised locals, which -Wmaybe-uninitialized reports (a known false positive).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#define PRIMA_X86_VNNI 1
#define PRIMA_X86_AVX512 1
#include "kernels/cpu/matmul_x86_impl.h"

namespace prima::kernels::detail {

const MatmulKernels* avx512_kernels() {
  // Reported as "avx2": the same numerics as the AVX2 kernels.
  static const MatmulKernels k = [] {
    MatmulKernels m = make_x86_kernels("avx2");
    m.q4_1_packed = avx512_packed_q4_1();
    m.q8_0_packed = avx512_packed_q8_0();
    m.native_packed = true;
    return m;
  }();
  return &k;
}

}  // namespace prima::kernels::detail
