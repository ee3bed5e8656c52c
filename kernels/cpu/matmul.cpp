// matmul(): converts the n activation rows once to the weight type's partner format, then
// runs the ISA's tile kernel over contiguous ranges of output rows on the pool. The ISA is
// chosen once per process: AVX2+FMA+F16C when the CPU has them (with AVX-VNNI products when
// it has those too), unless PRIMA_KERNELS=portable (or =avx2: no VNNI). The activation
// buffer is per calling thread.
#include "kernels/cpu/matmul.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/packed.h"

namespace prima::kernels {

namespace detail {

TileFn MatmulKernels::for_type(DType t) const {
  switch (t) {
    case DType::kF32:
      return f32;
    case DType::kF16:
      return f16;
    case DType::kBF16:
      return bf16;
    case DType::kQ4_0:
      return q4_0;
    case DType::kQ4_1:
      return q4_1;
    case DType::kQ8_0:
      return q8_0;
    case DType::kQ6_K:
      return q6_k;
    default:
      return nullptr;
  }
}

TileFn MatmulKernels::packed_for_type(DType t) const {
  if (t == DType::kQ4_1) return q4_1_packed;
  if (t == DType::kQ8_0) return q8_0_packed;
  return nullptr;
}

std::uint64_t new_activation_id() {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

float* scratch_floats(std::size_t n, std::uint64_t x_id, bool* holds_x) {
  thread_local std::vector<float> buf;
  thread_local std::uint64_t held = 0;  // the activations buf's contents derive from
  if (buf.size() < n) {
    buf.resize(n);
    held = 0;
  }
  *holds_x = x_id != 0 && x_id == held;
  held = x_id;
  return buf.data();
}

DType partner_type(DType weight) {
  switch (weight) {
    case DType::kQ4_0:
    case DType::kQ8_0:
      return DType::kQ8_0;
    case DType::kQ4_1:
      return DType::kQ8_1;
    case DType::kQ6_K:
      return DType::kQ8_K;
    default:
      return weight;  // F32, F16, BF16
  }
}

void matmul_with(const MatmulKernels& k, const WeightView& w, const float* x, std::int64_t n,
                 float* y, ThreadPool& pool) {
  matmul_many_with(k, &w, &y, 1, x, n, pool);
}

void matmul_many_with(const MatmulKernels& k, const WeightView* w, float* const* y, int count,
                      const float* x, std::int64_t n, ThreadPool& pool) {
  if (n <= 0 || count <= 0) return;
  // Products of one type and width share the converted activations and one pool job.
  constexpr int kMaxMany = 8;
  // Packed weights (all of them, or none) run the packed kernels; their row ranges start on
  // panels, so matrices go together only when each before the last fills its panels.
  const TileFn packed_fn = w[0].packed != nullptr ? k.packed_for_type(w[0].type) : nullptr;
  bool together = count <= kMaxMany;
  for (int i = 1; i < count && together; ++i)
    together = w[i].type == w[0].type && w[i].cols == w[0].cols &&
               (w[i].packed != nullptr) == (w[0].packed != nullptr) &&
               (packed_fn == nullptr || w[i - 1].rows % kPanelRows == 0);
  if (!together) {
    for (int i = 0; i < count; ++i) matmul_many_with(k, w + i, y + i, 1, x, n, pool);
    return;
  }
  // first[i]: matrix i's first row in the concatenation of all rows.
  std::int64_t first[kMaxMany + 1] = {0};
  for (int i = 0; i < count; ++i) first[i + 1] = first[i] + std::max<std::int64_t>(0, w[i].rows);
  const std::int64_t rows = first[count];
  if (rows <= 0) return;
  const bool packed = packed_fn != nullptr;
  const TileFn fn = packed ? packed_fn : k.for_type(w[0].type);
  const DType xt = partner_type(w[0].type);
  const std::size_t x_stride = row_bytes(xt, w[0].cols);
  const std::size_t w_stride =
      packed ? packed_panel_bytes(w[0].type, w[0].cols) : row_bytes(w[0].type, w[0].cols);
  thread_local std::vector<std::uint8_t> xq;
  if (xq.size() < x_stride * std::size_t(n)) xq.resize(x_stride * std::size_t(n));
  std::uint8_t* xb = xq.data();
  const std::int64_t cols = w[0].cols;
  if (n >= 8 && pool.size() > 1) {
    pool.parallel_for(n, [&](std::int64_t b, std::int64_t e, int) {
      for (std::int64_t t = b; t < e; ++t)
        k.quantize_x(xt, x + t * cols, xb + std::size_t(t) * x_stride, cols);
    });
  } else {
    for (std::int64_t t = 0; t < n; ++t)
      k.quantize_x(xt, x + t * cols, xb + std::size_t(t) * x_stride, cols);
  }
  // The pool hands out contiguous ranges (a few per thread), so the grain only aligns them
  // (4 rows); a product too small to repay a dispatch (< 32 KiB of weight bytes x tokens)
  // runs on the calling thread. A range may span matrices: each gets its part.
  const std::int64_t grain =
      double(row_bytes(w[0].type, w[0].cols)) * double(rows) * double(n) < 32768.0
          ? rows
          : std::int64_t(packed ? kPanelRows : 4);
  const std::uint64_t x_id = new_activation_id();
  pool.parallel_for(
      rows,
      [&](std::int64_t r0, std::int64_t r1, int) {
        for (int i = 0; i < count; ++i) {
          const std::int64_t lo = std::max(r0, first[i]) - first[i];
          const std::int64_t hi = std::min(r1, first[i + 1]) - first[i];
          if (lo < hi)
            fn(packed ? w[i].packed : static_cast<const std::uint8_t*>(w[i].data), w_stride, lo, hi,
               xb, x_stride, n, cols, y[i], w[i].rows, x_id);
        }
      },
      grain);
}

bool cpu_has_avx512_kernels() {
#if defined(__x86_64__) || defined(__i386__)
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
         __builtin_cpu_supports("avx512vnni");
#else
  return false;
#endif
}

namespace {

const MatmulKernels* choose_kernels() {
  const char* env = std::getenv("PRIMA_KERNELS");
  const bool force_portable = env != nullptr && std::strcmp(env, "portable") == 0;
#if defined(__x86_64__) || defined(__i386__)
  if (!force_portable && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c")) {
    // PRIMA_KERNELS=avx2: no VNNI products; =avxvnni: no AVX-512 (the 8-token kernel and
    // the packed kernels).
    const bool no_vnni = env != nullptr && std::strcmp(env, "avx2") == 0;
    const bool no_avx512 = env != nullptr && std::strcmp(env, "avxvnni") == 0;
    if (!no_vnni && !no_avx512 && cpu_has_avx512_kernels()) return avx512_kernels();
    if (!no_vnni && __builtin_cpu_supports("avxvnni")) return avxvnni_kernels();
    return avx2_kernels();
  }
#else
  (void)force_portable;
#endif
  return &portable_kernels();
}

}  // namespace

const MatmulKernels& active_kernels() {
  static const MatmulKernels* k = choose_kernels();
  return *k;
}

}  // namespace detail

using detail::active_kernels;

void matmul(const WeightView& w, const float* x, std::int64_t n, float* y, ThreadPool& pool) {
  detail::matmul_with(active_kernels(), w, x, n, y, pool);
}

void matmul_many(const WeightView* w, float* const* y, int count, const float* x, std::int64_t n,
                 ThreadPool& pool) {
  detail::matmul_many_with(active_kernels(), w, y, count, x, n, pool);
}

const char* kernel_isa() {
  return active_kernels().isa;
}

void matmul_reference(const WeightView& w, const float* x, std::int64_t n, float* y) {
  std::vector<float> row(static_cast<std::size_t>(w.cols));
  const std::size_t stride = row_bytes(w.type, w.cols);
  const auto* base = static_cast<const std::uint8_t*>(w.data);
  for (std::int64_t r = 0; r < w.rows; ++r) {
    dequantize_row(w.type, base + std::size_t(r) * stride, row.data(), w.cols);
    for (std::int64_t t = 0; t < n; ++t) {
      double s = 0.0;
      for (std::int64_t c = 0; c < w.cols; ++c) s += double(row[c]) * double(x[t * w.cols + c]);
      y[t * w.rows + r] = static_cast<float>(s);
    }
  }
}

}  // namespace prima::kernels
