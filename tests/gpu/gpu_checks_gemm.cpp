// Device checks of the GEMM (kernels/cuda/gemm.h): the build's make_gemm() (cuBLASLt on a
// device, the reference kernel on the CPU execution layer) and the reference kernel itself,
// FP16 inputs with a float output, BF16 inputs with a BF16 output, a scaled FP16 output and FP8
// E4M3 inputs with per-tensor scales (quantized by fp8_amax and to_fp8), against products of the
// same rounded inputs summed in double on the CPU (kernels/cpu's fp16/bf16 conversions).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/quant.h"
#include "kernels/cuda/fp8_e4m3.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/kernels.h"
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

// FP8 E4M3: x and w quantized on the device (fp8_amax, to_fp8: their codes and scales equal
// fp8_e4m3.h's on the host, bit for bit), then the GEMM with the two scales against the
// decoded codes' products summed in double. The build's GEMM needs sm_89 or later on a device.
CheckResult fp8_gemm(const std::string& which) {
  const std::int64_t m = 37, n = 576, k = 1536;
  cudaDeviceProp prop{};
  cuda_ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
  if (which == "build" && prop.major * 10 + prop.minor < 89)
    return {true, 0,
            "skipped: sm_" + std::to_string(prop.major * 10 + prop.minor) +
                " has no FP8 tensor cores (sm_89 and later)"};
  const auto xf = randn(m * k, 211), wf = randn(n * k, 212, 0.05f);
  auto host_quant = [](const std::vector<float>& v, float* scale) {
    float amax = 0;
    for (float f : v) amax = std::max(amax, std::fabs(f));
    *scale = cuda::fp8_e4m3_scale(amax);
    std::vector<std::uint8_t> q(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) q[i] = cuda::fp8_e4m3_encode_scaled(v[i], *scale);
    return q;
  };
  float xs = 0, ws = 0;
  const auto xq = host_quant(xf, &xs), wq = host_quant(wf, &ws);
  DeviceBuffer dxf(xf), dwf(wf), dxq(xq.size()), dwq(wq.size()), amax(sizeof(unsigned)),
      scales(2 * sizeof(float)), dy(std::size_t(m * n) * sizeof(float));
  float* dscale = scales.as<float>();
  for (int t = 0; t < 2; ++t) {
    const DeviceBuffer& src = t == 0 ? dxf : dwf;
    const DeviceBuffer& dst = t == 0 ? dxq : dwq;
    const std::int64_t count = t == 0 ? m * k : n * k;
    finish(
        cuda::fp8_amax(kernels::DType::kF32, src.as<void>(), count, amax.as<unsigned>(), nullptr),
        "fp8_amax");
    finish(cuda::to_fp8(kernels::DType::kF32, src.as<void>(), count, amax.as<unsigned>(),
                        dst.as<std::uint8_t>(), dscale + t, nullptr),
           "to_fp8");
  }
  const auto got_scales = scales.read<float>(2);
  if (got_scales[0] != xs || got_scales[1] != ws)
    return {false, 0,
            "to_fp8 scales " + std::to_string(got_scales[0]) + ", " +
                std::to_string(got_scales[1]) + "; the host's " + std::to_string(xs) + ", " +
                std::to_string(ws)};
  if (dxq.read<std::uint8_t>(xq.size()) != xq || dwq.read<std::uint8_t>(wq.size()) != wq)
    return {false, 0, "to_fp8 codes differ from fp8_e4m3.h's"};
  std::vector<double> want(static_cast<std::size_t>(m * n)), tol(want.size());
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = 0, sa = 0;
      for (std::int64_t c = 0; c < k; ++c) {
        const double p = double(cuda::fp8_e4m3_decode(xq[i * k + c])) *
                         cuda::fp8_e4m3_decode(wq[j * k + c]) * xs * ws;
        s += p;
        sa += std::fabs(p);
      }
      want[i * n + j] = s;
      tol[i * n + j] = 1e-5 * sa + 1e-6;
    }
  std::string error;
  std::unique_ptr<cuda::Gemm> g =
      which == "reference" ? std::make_unique<cuda::ReferenceGemm>() : cuda::make_gemm(&error);
  if (!g) return {false, 0, "make_gemm: " + error};
  cuda::GemmShape shape{m, n, k, GemmType::kFP8E4M3, GemmType::kF32, 1.0f, dscale, dscale + 1};
  if (std::string e = g->run(shape, dxq.as<void>(), dwq.as<void>(), dy.as<void>(), nullptr);
      !e.empty())
    return {false, 0, std::string(g->name()) + " run: " + e};
  finish(cudaGetLastError(), "FP8 GEMM");
  return compare(dy.read<float>(want.size()), want, tol,
                 std::string(g->name()) + " FP8 E4M3 37x576x1536 (per-tensor scales) -> F32");
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
  out->push_back({"gemm_fp8_f32", [] { return fp8_gemm("build"); }});
  out->push_back({"gemm_reference_fp8_f32", [] { return fp8_gemm("reference"); }});
}

}  // namespace prima::gpu_checks
