// Internal to kernels/cpu: the per-ISA matmul tile kernels behind matmul(), exposed so tests
// can hold the implementations to each other. Stateless; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu/matmul.h"

namespace prima::kernels::detail {

// Dot products of weight rows [r0, r1) with n activation rows already converted to the
// weight type's partner format: y[t * ldy + r] = dot(W[r], X[t]) for t < n.
// w points at row 0 (rows w_stride bytes apart); x at activation row 0 (x_stride apart).
// x_id names the activations: calls with the same nonzero id on one thread see the same x,
// n, x_stride, cols and weight type, so a kernel may reuse what it derived from x in an
// earlier call (new_activation_id() per conversion of x); 0 never matches.
using TileFn = void (*)(const std::uint8_t* w, std::size_t w_stride, std::int64_t r0,
                        std::int64_t r1, const std::uint8_t* x, std::size_t x_stride,
                        std::int64_t n, std::int64_t cols, float* y, std::int64_t ldy,
                        std::uint64_t x_id);

// A process-wide unique, nonzero TileFn x_id (thread-safe).
std::uint64_t new_activation_id();

// Converts a row of n activations to the partner format t (as quantize_row, bit for bit).
using QuantizeFn = void (*)(DType t, const float* x, void* dst, std::int64_t n);

struct MatmulKernels {
  const char* isa;
  TileFn f32, f16, bf16, q4_0, q4_1, q8_0, q6_k;
  QuantizeFn quantize_x;
  // Kernels for weights packed into panels (packed.h): w is the matrix's first panel,
  // w_stride the bytes per panel, r0 a multiple of 16 (r1 may end inside a panel). A set
  // without its own runs the portable ones (the same bits); native_packed: fast ones.
  TileFn q4_1_packed = nullptr, q8_0_packed = nullptr;
  bool native_packed = false;
  TileFn for_type(DType t) const;         // nullptr for types that are not weights
  TileFn packed_for_type(DType t) const;  // nullptr for types without a packed layout
};

const MatmulKernels& portable_kernels();
// The kernel set matmul() uses in this process (PRIMA_KERNELS, the CPU).
const MatmulKernels& active_kernels();
// Packed kernels (packed.cpp): plain C++, and the AVX-512 VNNI ones (packed_avx512.cpp,
// only valid where cpu_has_avx512_kernels(); part of avx512_kernels()).
TileFn portable_packed_q4_1();
TileFn portable_packed_q8_0();
TileFn avx512_packed_q4_1();
TileFn avx512_packed_q8_0();
// The activation scales packed kernels read, per token t and block b at i = t * nb + b: d_x as
// float in dx[i]; in `second` s_x as float at i (xt Q8_1), or for xt Q8_0 at i * 8 + j the
// int32 bits of -128 times the sum of lane j's 4 quants (elements 4j .. 4j + 3).
void packed_x_scales(DType xt, const std::uint8_t* x, std::size_t x_stride, std::int64_t n,
                     std::int64_t nb, float* dx, float* second);
// Values per block and token in packed_x_scales' `second`: 1 (Q8_1) or 8 (Q8_0).
std::int64_t packed_x_second_per_block(DType xt);
// Only valid on a CPU with AVX2, FMA and F16C; nullptr when not compiled in.
const MatmulKernels* avx2_kernels();
// The same with AVX-VNNI products; only valid on a CPU that also has AVX-VNNI.
const MatmulKernels* avxvnni_kernels();
// The same with the 8-token kernel on AVX-512 VNNI (and the EVEX form of the 256-bit VNNI
// products); only valid on a CPU with AVX-512 F/BW/VL/DQ and AVX-512 VNNI.
const MatmulKernels* avx512_kernels();
// Whether this CPU can run avx512_kernels() (and the packed kernels): AVX-512 F/BW/VL/DQ and
// VNNI, with or without AVX-VNNI (e.g. AMD Zen 4, Intel Ice Lake).
bool cpu_has_avx512_kernels();

// A per-thread scratch buffer of at least n floats (valid until the thread's next call), for
// what a kernel derives from the activations `x_id` (TileFn). *holds_x is true when the
// buffer still holds what the previous call on this thread derived from the same nonzero
// x_id (not reallocated since); the caller then may skip deriving it again.
float* scratch_floats(std::size_t n, std::uint64_t x_id, bool* holds_x);

// The activation format matmul converts x to for a weight type (Q4_1 -> Q8_1, ...).
DType partner_type(DType weight);

// matmul through a given kernel set.
void matmul_with(const MatmulKernels& k, const WeightView& w, const float* x, std::int64_t n,
                 float* y, ThreadPool& pool);
// matmul_many through a given kernel set.
void matmul_many_with(const MatmulKernels& k, const WeightView* w, float* const* y, int count,
                      const float* x, std::int64_t n, ThreadPool& pool);

}  // namespace prima::kernels::detail
