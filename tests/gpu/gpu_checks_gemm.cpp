// Device checks of the GEMM (kernels/cuda/gemm.h): the build's make_gemm() (cuBLASLt on a
// device, the reference kernel on the CPU execution layer) and the reference kernel itself,
// FP16 inputs with a float output, BF16 inputs with a BF16 output, and a scaled FP16 output,
// against products of the same rounded inputs summed in double on the CPU (kernels/cpu's
// fp16/bf16 conversions).
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/quant.h"
#include "kernels/cuda/gemm.h"
#include "tests/gpu/check_support.h"
#include "tests/kernels/cpu/random_data.h"

namespace prima::gpu_checks {

namespace {

using cuda::GemmType;
using kernels::testing::randn;

// which: "build" (make_gemm) or "reference".
CheckResult gemm(GemmType in, GemmType out, float alpha, const std::string& which) {
  const std::int64_t m = 37, n = 576, k = 1536;  // 37 tokens through a down projection
  const bool f16 = in == GemmType::kF16;
  auto to_bits = [&](const std::vector<float>& v) {
    std::vector<std::uint16_t> b(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      b[i] = f16 ? kernels::fp32_to_fp16(v[i]) : kernels::fp32_to_bf16(v[i]);
    return b;
  };
  auto from_bits = [&](std::uint16_t h) {
    return f16 ? kernels::fp16_to_fp32(h) : kernels::bf16_to_fp32(h);
  };
  const auto x = to_bits(randn(m * k, 201)), w = to_bits(randn(n * k, 202, 0.05f));
  std::vector<double> want(static_cast<std::size_t>(m * n)), tol(want.size());
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0, sa = 0;
      for (std::int64_t c = 0; c < k; ++c) {
        const double p = double(from_bits(x[i * k + c])) * from_bits(w[j * k + c]);
        s += p;
        sa += std::fabs(p);
      }
      want[i * n + j] = alpha * s;
      sa *= std::fabs(alpha);
      s *= alpha;
      // Float accumulation, plus the output's rounding when it is 16-bit.
      const double out_rel = out == GemmType::kF32 ? 0 : (out == GemmType::kF16 ? 1e-3 : 8e-3);
      tol[i * n + j] = 1e-5 * sa + out_rel * std::fabs(s) + 1e-6;
    }
  std::string error;
  std::unique_ptr<cuda::Gemm> g =
      which == "reference" ? std::make_unique<cuda::ReferenceGemm>() : cuda::make_gemm(&error);
  if (!g) return {false, 0, "make_gemm: " + error};
  const std::size_t out_bytes = out == GemmType::kF32 ? 4 : 2;
  DeviceBuffer dx(x), dw(w), dy(want.size() * out_bytes);
  if (std::string e =
          g->run({m, n, k, in, out, alpha}, dx.as<void>(), dw.as<void>(), dy.as<void>(), nullptr);
      !e.empty())
    return {false, 0, std::string(g->name()) + " run: " + e};
  finish(cudaGetLastError(), "cublasLtMatmul");
  std::vector<float> got(want.size());
  if (out == GemmType::kF32) {
    got = dy.read<float>(want.size());
  } else {
    const auto bits = dy.read<std::uint16_t>(want.size());
    for (std::size_t i = 0; i < got.size(); ++i) got[i] = from_bits(bits[i]);
  }
  return compare(got, want, tol,
                 std::string(g->name()) + " " + (f16 ? "F16" : "BF16") + " 37x576x1536 -> " +
                     (out == GemmType::kF32 ? "F32" : (f16 ? "F16" : "BF16")) +
                     (alpha != 1.0f ? " scaled" : ""));
}

}  // namespace

void add_gemm_checks(std::vector<Check>* out) {
  out->push_back({"gemm_f16_f32", [] { return gemm(GemmType::kF16, GemmType::kF32, 1, "build"); }});
  out->push_back(
      {"gemm_bf16_bf16", [] { return gemm(GemmType::kBF16, GemmType::kBF16, 1, "build"); }});
  out->push_back({"gemm_f16_f16_scaled",
                  [] { return gemm(GemmType::kF16, GemmType::kF16, 0.125f, "build"); }});
  out->push_back({"gemm_reference_bf16_f32",
                  [] { return gemm(GemmType::kBF16, GemmType::kF32, 1, "reference"); }});
}

}  // namespace prima::gpu_checks
