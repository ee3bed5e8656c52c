// Device check of synthetic weights (kernels.h synthetic_rows): rows of a synthetic tensor made
// on the device in each weight type, byte for byte against the host's values (synthetic_math.h)
// quantized by kernels/cpu's quantize_row, the way backends/real/synthetic_model.cpp writes
// them into a model file: the weights made on a device are the file's.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cpu/quant.h"
#include "kernels/cuda/kernels.h"
#include "kernels/cuda/synthetic_math.h"
#include "tests/gpu/check_support.h"

namespace prima::gpu_checks {

namespace {

using kernels::DType;

struct Case {
  DType type;
  std::int64_t row0, rows, cols;
  float half_width, mean;
};

// The bytes of `c`'s rows as the host writes them; "" or the first difference from `got`.
std::string compare_case(const Case& c, std::uint64_t seed, std::uint64_t tensor,
                         const std::vector<std::uint8_t>& got) {
  const std::size_t rb = kernels::row_bytes(c.type, c.cols);
  std::vector<float> row(std::size_t(c.cols));
  std::vector<std::uint8_t> want(rb);
  for (std::int64_t r = 0; r < c.rows; ++r) {
    const std::uint64_t st = cuda::synthetic_row_state(seed, tensor, std::uint64_t(c.row0 + r));
    for (std::int64_t j = 0; j < c.cols; ++j)
      row[std::size_t(j)] = cuda::synthetic_value(st, j, c.half_width, c.mean);
    kernels::quantize_row(c.type, row.data(), want.data(), c.cols);
    for (std::size_t b = 0; b < rb; ++b)
      if (got[std::size_t(r) * rb + b] != want[b])
        return std::string(kernels::type_traits(c.type)->name) + " row " +
               std::to_string(c.row0 + r) + " byte " + std::to_string(b) + " is " +
               std::to_string(got[std::size_t(r) * rb + b]) + ", the host's " +
               std::to_string(want[b]);
  }
  return "";
}

CheckResult synthetic_rows() {
  const std::uint64_t seed = 7, tensor = 12;
  const std::vector<Case> cases = {
      {DType::kBF16, 3, 37, 576, 0.072f, 0.0f},   {DType::kF16, 0, 9, 1536, 0.044f, 0.0f},
      {DType::kF16, 5, 4, 100, 0.1f, 0.0f},       {DType::kF32, 0, 1, 576, 0.17f, 1.0f},
      {DType::kQ8_0, 11, 21, 576, 0.072f, 0.0f},  {DType::kQ4_0, 2, 17, 256, 0.108f, 0.0f},
      {DType::kQ4_1, 40, 13, 1536, 0.044f, 0.0f}, {DType::kQ4_1, 0, 3, 64, 0.17f, 1.0f},
  };
  CheckResult res;
  res.ok = true;
  std::size_t bytes = 0;
  for (const Case& c : cases) {
    const std::size_t n = kernels::row_bytes(c.type, c.cols) * std::size_t(c.rows);
    DeviceBuffer d(n);
    finish(cuda::synthetic_rows(c.type, seed, tensor, c.row0, c.rows, c.cols, c.half_width, c.mean,
                                d.as<void>(), nullptr),
           "synthetic_rows");
    if (std::string diff = compare_case(c, seed, tensor, d.read<std::uint8_t>(n)); !diff.empty()) {
      res.ok = false;
      res.max_err = 2;
      res.detail = diff;
      return res;
    }
    bytes += n;
  }
  // A block type's columns must fill whole blocks.
  DeviceBuffer spare(64);
  if (cuda::synthetic_rows(DType::kQ8_0, seed, tensor, 0, 1, 48, 0.1f, 0.0f, spare.as<void>(),
                           nullptr) != cudaErrorInvalidValue) {
    res.ok = false;
    res.max_err = 2;
    res.detail = "48 columns of Q8_0 were not refused";
    return res;
  }
  cudaGetLastError();
  res.detail = std::to_string(cases.size()) + " tensors in F32, F16, BF16, Q8_0, Q4_0, Q4_1 (" +
               std::to_string(bytes) + " bytes) equal the host's bytes";
  return res;
}

}  // namespace

void add_synthetic_checks(std::vector<Check>* out) {
  out->push_back({"synthetic_rows", synthetic_rows});
}

}  // namespace prima::gpu_checks
