// Device checks of INT8 W8A8 (kernels.h quantize_i8_rows, dequant_i32, and gemm.h's INT8
// products): BF16 weights and float activations quantized per row on the device against the
// same formula on the host (codes and scales bit for bit, a row of zeros included), the build's
// GEMM (cuBLASLt on a device, the reference kernel on the CPU execution layer) and the reference
// kernel into INT32 against exact host sums, and the scaling back against the host's floats.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kernels/cpu/quant.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/kernels.h"
#include "tests/gpu/check_support.h"
#include "tests/kernels/cpu/random_data.h"

namespace prima::gpu_checks {

namespace {

using cuda::GemmType;
using kernels::testing::randn;

// The host's codes and scales of quantize_i8_rows for rows x cols values.
void host_quantize(const std::vector<float>& x, std::int64_t rows, std::int64_t cols,
                   std::vector<std::int8_t>* q, std::vector<float>* scale) {
  q->assign(x.size(), 0);
  scale->assign(std::size_t(rows), 0.0f);
  for (std::int64_t r = 0; r < rows; ++r) {
    float amax = 0;
    for (std::int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(x[r * cols + c]));
    const float s = amax / 127.0f;
    (*scale)[std::size_t(r)] = s;
    for (std::int64_t c = 0; c < cols; ++c) {
      const float v = s > 0 ? std::rint(x[r * cols + c] / s) : 0.0f;
      (*q)[std::size_t(r * cols + c)] = std::int8_t(std::clamp(v, -127.0f, 127.0f));
    }
  }
}

// which: "build" (make_gemm) or "reference". 37 tokens through a 576 x 1536 down projection.
CheckResult int8_gemm(const std::string& which) {
  const std::int64_t m = 37, n = 576, k = 1536;
  auto xf = randn(m * k, 701, 2.0f);
  std::fill(xf.begin() + 5 * k, xf.begin() + 6 * k, 0.0f);  // token 5: all zeros
  const auto wf = randn(n * k, 702, 0.05f);
  std::vector<std::uint16_t> wb(wf.size());  // the weights as a BF16 file holds them
  kernels::quantize_row(kernels::DType::kBF16, wf.data(), wb.data(), n * k);
  std::vector<float> wr(wf.size());
  kernels::dequantize_row(kernels::DType::kBF16, wb.data(), wr.data(), n * k);
  std::vector<std::int8_t> xq, wq;
  std::vector<float> xs, ws;
  host_quantize(xf, m, k, &xq, &xs);
  host_quantize(wr, n, k, &wq, &ws);

  DeviceBuffer dx(xf), dw(wb), dxq(xq.size()), dwq(wq.size()), dxs(xs.size() * sizeof(float)),
      dws(ws.size() * sizeof(float)), dacc(std::size_t(m * n) * sizeof(std::int32_t)),
      dy(std::size_t(m * n) * sizeof(float));
  finish(cuda::quantize_i8_rows(kernels::DType::kF32, dx.as<float>(), m, k, dxq.as<std::int8_t>(),
                                dxs.as<float>(), nullptr),
         "quantize_i8_rows (activations)");
  finish(cuda::quantize_i8_rows(kernels::DType::kBF16, dw.as<void>(), n, k, dwq.as<std::int8_t>(),
                                dws.as<float>(), nullptr),
         "quantize_i8_rows (BF16 weights)");
  if (dxq.read<std::int8_t>(xq.size()) != xq || dwq.read<std::int8_t>(wq.size()) != wq)
    return {false, 1e9, "quantize_i8_rows codes differ from the host's"};
  if (dxs.read<float>(xs.size()) != xs || dws.read<float>(ws.size()) != ws)
    return {false, 1e9, "quantize_i8_rows scales differ from the host's"};

  std::string error;
  std::unique_ptr<cuda::Gemm> g =
      which == "reference" ? std::make_unique<cuda::ReferenceGemm>() : cuda::make_gemm(&error);
  if (!g) return {false, 0, "make_gemm: " + error};
  cuda::GemmShape shape{m, n, k, GemmType::kI8, GemmType::kI32, 1.0f};
  if (std::string e = g->run(shape, dxq.as<void>(), dwq.as<void>(), dacc.as<void>(), nullptr);
      !e.empty())
    return {false, 0, std::string(g->name()) + " run: " + e};
  finish(cudaGetLastError(), "INT8 GEMM");
  finish(cuda::dequant_i32(dacc.as<std::int32_t>(), dxs.as<float>(), dws.as<float>(), m, n,
                           dy.as<float>(), nullptr),
         "dequant_i32");
  const auto acc = dacc.read<std::int32_t>(std::size_t(m * n));
  const auto y = dy.read<float>(std::size_t(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      std::int64_t want = 0;
      for (std::int64_t c = 0; c < k; ++c) want += std::int64_t(xq[i * k + c]) * wq[j * k + c];
      const std::size_t o = std::size_t(i * n + j);
      if (acc[o] != want)
        return {false, 1e9,
                std::string(g->name()) + " INT8 product (" + std::to_string(i) + ", " +
                    std::to_string(j) + ") is " + std::to_string(acc[o]) + ", exactly " +
                    std::to_string(want)};
      if (y[o] != float(want) * (xs[std::size_t(i)] * ws[std::size_t(j)]))
        return {false, 1e9, "dequant_i32 (" + std::to_string(i) + ", " + std::to_string(j) + ")"};
    }
  return {true, 0,
          std::string(g->name()) +
              " INT8 W8A8 37x576x1536 (per-token and per-channel scales): "
              "codes, scales, INT32 products and scaled floats exact"};
}

}  // namespace

void add_int8_checks(std::vector<Check>* out) {
  out->push_back({"gemm_int8_w8a8", [] { return int8_gemm("build"); }});
  out->push_back({"gemm_reference_int8_w8a8", [] { return int8_gemm("reference"); }});
}

}  // namespace prima::gpu_checks
