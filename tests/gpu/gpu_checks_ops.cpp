// Device checks of kernels.h's kernels against kernels/cpu: the dequantizing GEMV against
// matmul_reference (dequantized rows, double sums), RMSNorm, RoPE, SwiGLU and the residual add
// against ops.h, the TP all-gather's interleave. Shapes are SmolLM2's.
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/quant.h"
#include "kernels/cuda/kernels.h"
#include "tests/gpu/check_support.h"
#include "tests/kernels/cpu/random_data.h"

namespace prima::gpu_checks {

namespace {

using kernels::DType;
using kernels::testing::randn;

std::vector<double> widen(const std::vector<float>& v) {
  return std::vector<double>(v.begin(), v.end());
}
// tol[i] = rel * |want[i]| + abs.
std::vector<double> tolerance(const std::vector<double>& want, double rel, double abs) {
  std::vector<double> t(want.size());
  for (std::size_t i = 0; i < want.size(); ++i) t[i] = rel * std::fabs(want[i]) + abs;
  return t;
}

// y = W x for a rows x cols matrix of `type`. Float sums of cols products: the tolerance is
// 1e-5 of the sum of |w x| (a wrong nibble or scale is off by far more).
CheckResult gemv(DType type) {
  const std::int64_t rows = 1536, cols = 576;
  const auto wf = randn(rows * cols, 101, 0.05f);
  std::vector<std::uint8_t> w(kernels::row_bytes(type, cols) * rows);
  for (std::int64_t r = 0; r < rows; ++r)
    kernels::quantize_row(type, wf.data() + r * cols, w.data() + r * kernels::row_bytes(type, cols),
                          cols);
  const auto x = randn(cols, 102);
  std::vector<float> ref(static_cast<std::size_t>(rows));
  const kernels::WeightView view{type, w.data(), rows, cols, nullptr};
  kernels::matmul_reference(view, x.data(), 1, ref.data());
  std::vector<double> tol(static_cast<std::size_t>(rows));
  std::vector<float> row(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    kernels::dequantize_row(type, w.data() + r * kernels::row_bytes(type, cols), row.data(), cols);
    double s = 0;
    for (std::int64_t c = 0; c < cols; ++c) s += std::fabs(double(row[c]) * x[c]);
    tol[r] = 1e-5 * s + 1e-6;
  }
  DeviceBuffer dw(w), dx(x), dy(rows * sizeof(float));
  finish(cuda::gemv_quant(type, dw.as<void>(), dx.as<float>(), dy.as<float>(), rows, cols, nullptr),
         "gemv_quant");
  return compare(dy.read<float>(rows), widen(ref), tol,
                 std::string("gemv ") + kernels::type_traits(type)->name + " 1536x576");
}

CheckResult rms_norm() {
  const std::int64_t rows = 4, n = 576;
  const auto x = randn(rows * n, 111, 3.0f), w = randn(n, 112);
  std::vector<float> ref(x.size());
  for (std::int64_t r = 0; r < rows; ++r)
    kernels::rms_norm(x.data() + r * n, w.data(), n, 1e-5f, ref.data() + r * n);
  DeviceBuffer dx(x), dw(w), dy(x.size() * sizeof(float));
  finish(cuda::rms_norm(dx.as<float>(), dw.as<float>(), rows, n, 1e-5f, dy.as<float>(), nullptr),
         "rms_norm");
  const auto want = widen(ref);
  return compare(dy.read<float>(x.size()), want, tolerance(want, 1e-5, 1e-7), "rms_norm 4x576");
}

// The residual add fused into RMSNorm: x += r then the norm, against ops.h's add and rms_norm
// (the sum written back exactly, the norm as rms_norm's tolerance).
CheckResult add_rms_norm() {
  const std::int64_t rows = 5, n = 576;
  auto x = randn(rows * n, 113, 3.0f);
  const auto r = randn(rows * n, 114, 2.0f), w = randn(n, 115);
  DeviceBuffer dx(x), dr(r), dw(w), dy(x.size() * sizeof(float));
  finish(cuda::add_rms_norm(dx.as<float>(), dr.as<float>(), dw.as<float>(), rows, n, 1e-5f,
                            dy.as<float>(), nullptr),
         "add_rms_norm");
  std::vector<float> ref(x.size());
  kernels::add_inplace(x.data(), r.data(), rows * n);
  for (std::int64_t i = 0; i < rows; ++i)
    kernels::rms_norm(x.data() + i * n, w.data(), n, 1e-5f, ref.data() + i * n);
  if (dx.read<float>(x.size()) != x) return {false, 1e9, "add_rms_norm: x + r differs"};
  const auto want = widen(ref);
  return compare(dy.read<float>(x.size()), want, tolerance(want, 1e-5, 1e-7),
                 "add_rms_norm 5x576 (the sum exact)");
}

CheckResult rope() {
  const int heads = 9, head_dim = 64;
  CheckResult worst{true, 0, ""};
  for (std::int64_t pos : {0, 1, 17, 4000, 8191}) {
    auto x = randn(heads * head_dim, 121 + std::uint32_t(pos));
    DeviceBuffer dx(x);
    finish(cuda::rope(dx.as<float>(), heads, head_dim, head_dim, pos, 100000.0f, nullptr), "rope");
    kernels::rope(x.data(), heads, head_dim, head_dim, pos, 100000.0f);
    const auto want = widen(x);
    // cosf/sinf of the device and of libm differ by an ulp or two.
    CheckResult r = compare(dx.read<float>(x.size()), want, tolerance(want, 1e-5, 2e-6),
                            "rope 9x64 at position " + std::to_string(pos));
    if (!r.ok) return r;
    if (r.max_err >= worst.max_err) worst = r;
  }
  worst.detail = "rope 9x64 at positions 0, 1, 17, 4000, 8191 (worst: " + worst.detail + ")";
  return worst;
}

CheckResult swiglu() {
  const std::int64_t n = 1536 * 3;
  const auto g = randn(n, 131, 4.0f), u = randn(n, 132);
  std::vector<float> ref(g.size());
  kernels::silu_mul(g.data(), u.data(), n, ref.data());
  DeviceBuffer dg(g), du(u), dy(g.size() * sizeof(float));
  finish(cuda::swiglu(dg.as<float>(), du.as<float>(), n, dy.as<float>(), nullptr), "swiglu");
  const auto want = widen(ref);
  return compare(dy.read<float>(g.size()), want, tolerance(want, 1e-6, 1e-7), "swiglu 4608");
}

CheckResult add() {
  const std::int64_t n = 100003;
  auto y = randn(n, 141);
  const auto x = randn(n, 142);
  DeviceBuffer dy(y), dx(x);
  finish(cuda::add_inplace(dy.as<float>(), dx.as<float>(), n, nullptr), "add_inplace");
  kernels::add_inplace(y.data(), x.data(), n);
  const auto want = widen(y);
  return compare(dy.read<float>(y.size()), want, tolerance(want, 0, 0), "add 100003 (exact)");
}

// Three ranks' slices of 7 tokens x 40 columns as an all-gather leaves them (part-major)
// interleaved into 7 x 120, as DeviceForward::gather does; the output starts full of NaN so a
// column the kernel skips shows.
CheckResult interleave_columns() {
  const std::int64_t tokens = 7, cols = 40;
  const int parts = 3;
  const auto gathered = randn(tokens * cols * parts, 161);
  std::vector<float> want(gathered.size());
  for (int p = 0; p < parts; ++p)
    for (std::int64_t t = 0; t < tokens; ++t)
      for (std::int64_t c = 0; c < cols; ++c)
        want[std::size_t(t * cols * parts + p * cols + c)] =
            gathered[std::size_t((p * tokens + t) * cols + c)];
  DeviceBuffer dg(gathered), df(std::vector<float>(want.size(), NAN));
  finish(cuda::interleave_columns(dg.as<float>(), tokens, cols, parts, df.as<float>(), nullptr),
         "interleave_columns");
  const auto w = widen(want);
  return compare(df.read<float>(want.size()), w, tolerance(w, 0, 0),
                 "interleave_columns 3 parts of 7x40 (exact)");
}

}  // namespace

void add_ops_checks(std::vector<Check>* out) {
  out->push_back({"gemv_q4_0", [] { return gemv(DType::kQ4_0); }});
  out->push_back({"gemv_q4_1", [] { return gemv(DType::kQ4_1); }});
  out->push_back({"gemv_q8_0", [] { return gemv(DType::kQ8_0); }});
  out->push_back({"rms_norm", rms_norm});
  out->push_back({"add_rms_norm", add_rms_norm});
  out->push_back({"rope", rope});
  out->push_back({"swiglu", swiglu});
  out->push_back({"add", add});
  out->push_back({"interleave_columns", interleave_columns});
}

}  // namespace prima::gpu_checks
