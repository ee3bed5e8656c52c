// Device checks of W4A16 (kernels.h quantize_w4_rows, gemm_w4a16): F16 or BF16 weights as 4-bit
// codes with an f16 scale and minimum per group, against the same formula on the host (codes,
// scales and minima bit for bit, a constant group included), and the GEMM of 16-bit activations
// with them against the host's sums in double of the dequantized weights, within float rounding.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/quant.h"
#include "kernels/cuda/half_math.h"
#include "kernels/cuda/kernels.h"
#include "tests/gpu/check_support.h"
#include "tests/kernels/cpu/random_data.h"

namespace prima::gpu_checks {

namespace {

using kernels::DType;
using kernels::testing::randn;

struct HostW4 {
  std::vector<std::uint8_t> q;
  std::vector<std::uint16_t> dm;
  std::vector<double> w;  // the dequantized weights
};

// quantize_w4_rows's formula on the host, over the 16-bit values `v` as floats.
HostW4 host_quantize(const std::vector<float>& v, std::int64_t rows, std::int64_t cols, int group) {
  HostW4 h;
  h.q.assign(std::size_t(rows * cols / 2), 0);
  h.w.assign(v.size(), 0.0);
  for (std::int64_t g = 0; g < rows * (cols / group); ++g) {
    const std::int64_t base = (g / (cols / group)) * cols + (g % (cols / group)) * group;
    float mn = v[std::size_t(base)], mx = mn;
    for (int j = 1; j < group; ++j) {
      mn = std::fmin(mn, v[std::size_t(base + j)]);
      mx = std::fmax(mx, v[std::size_t(base + j)]);
    }
    const std::uint16_t dh = cuda::float_to_half((mx - mn) / 15.0f), mh = cuda::float_to_half(mn);
    h.dm.push_back(dh);
    h.dm.push_back(mh);
    const float d = cuda::half_to_float(dh), m = cuda::half_to_float(mh);
    for (int j = 0; j < group; ++j) {
      const float c = d > 0.0f ? std::rint((v[std::size_t(base + j)] - m) / d) : 0.0f;
      const int code = int(std::fmin(15.0f, std::fmax(0.0f, c)));
      h.q[std::size_t((base + j) / 2)] |= std::uint8_t(code << (4 * ((base + j) % 2)));
      h.w[std::size_t(base + j)] = double(float(code) * d + m);
    }
  }
  return h;
}

std::vector<std::uint16_t> to_16(DType type, std::vector<float>* v) {
  std::vector<std::uint16_t> b(v->size());
  kernels::quantize_row(type, v->data(), b.data(), std::int64_t(v->size()));
  kernels::dequantize_row(type, b.data(), v->data(), std::int64_t(v->size()));
  return b;
}

// tokens x rows x cols; the group w4_group_size picks.
CheckResult w4a16(DType type, std::int64_t tokens, std::int64_t rows, std::int64_t cols) {
  const int group = cuda::w4_group_size(cols);
  auto wf = randn(rows * cols, 801 + std::uint32_t(cols), 0.05f);
  std::fill(wf.begin() + 3 * cols, wf.begin() + 3 * cols + group, 0.02f);  // row 3: constant group
  auto xf = randn(tokens * cols, 802 + std::uint32_t(tokens), 1.0f);
  const auto wb = to_16(type, &wf);
  const auto xb = to_16(type, &xf);
  const HostW4 h = host_quantize(wf, rows, cols, group);

  DeviceBuffer dw(wb), dx(xb), dq(h.q.size()), ddm(h.dm.size() * 2),
      dy(std::size_t(tokens * rows) * sizeof(float));
  finish(cuda::quantize_w4_rows(type, dw.as<void>(), rows, cols, group, dq.as<std::uint8_t>(),
                                ddm.as<std::uint16_t>(), nullptr),
         "quantize_w4_rows");
  if (dq.read<std::uint8_t>(h.q.size()) != h.q)
    return {false, 1e9, "quantize_w4_rows codes differ from the host's"};
  if (ddm.read<std::uint16_t>(h.dm.size()) != h.dm)
    return {false, 1e9, "quantize_w4_rows scales or minima differ from the host's"};
  finish(cuda::gemm_w4a16(type, dx.as<void>(), dq.as<std::uint8_t>(), ddm.as<std::uint16_t>(),
                          group, rows, cols, tokens, dy.as<float>(), nullptr),
         "gemm_w4a16");
  const auto y = dy.read<float>(std::size_t(tokens * rows));
  std::vector<double> want(y.size()), tol(y.size());
  for (std::int64_t t = 0; t < tokens; ++t)
    for (std::int64_t r = 0; r < rows; ++r) {
      double s = 0, mag = 0;
      for (std::int64_t c = 0; c < cols; ++c) {
        const double p = h.w[std::size_t(r * cols + c)] * xf[std::size_t(t * cols + c)];
        s += p;
        mag += std::fabs(p);
      }
      want[std::size_t(t * rows + r)] = s;
      tol[std::size_t(t * rows + r)] = 1e-5 * mag + 1e-6;  // float sums of `cols` products
    }
  return compare(y, want, tol,
                 std::string(kernels::type_traits(type)->name) + " W4A16 " +
                     std::to_string(tokens) + "x" + std::to_string(rows) + "x" +
                     std::to_string(cols) + " (groups of " + std::to_string(group) +
                     "): codes, scales and minima exact, products against double sums");
}

}  // namespace

void add_w4a16_checks(std::vector<Check>* out) {
  out->push_back({"gemm_w4a16_bf16", [] { return w4a16(DType::kBF16, 37, 576, 1536); }});
  out->push_back({"gemm_w4a16_f16_decode", [] { return w4a16(DType::kF16, 1, 1536, 576); }});
}

}  // namespace prima::gpu_checks
