// The device-kernel checks: each runs one kernel of kernels/cuda (kernels.h, gemm_lt.h) on
// seeded random data and holds it to kernels/cpu's kernel for the same operation, within a
// tolerance for its data type. Two front ends run them: the GoogleTest binary
// prima_gpu_tests (ctest label `gpu`; each check skipped with the reason when there is no CUDA
// device) and prima_gpu_check (scripts/gpu_check.sh: no GoogleTest needed, a JSON summary).
// Each check uses the current device and synchronises; not thread-safe.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace prima::gpu_checks {

struct CheckResult {
  bool ok = false;
  double max_err = 0;  // the largest |device - cpu| / tolerance: <= 1 passes
  std::string detail;  // what was compared, or what failed
};

struct Check {
  const char* name;  // "gemv_q4_1"
  std::function<CheckResult()> run;
};

// "" when a CUDA device is there to run on, else the reason to skip ("no CUDA device
// (cudaGetDeviceCount: ...)").
std::string unavailable_reason();

// `s` as a JSON string literal, quotes and escapes included (the JSON summaries are written
// without a JSON library: the GPU machine has none).
std::string json_string(const std::string& s);

// Every check, in a fixed order.
const std::vector<Check>& all_checks();

// Checks of each group (gpu_checks_ops.cpp, gpu_checks_gemm.cpp, fp8_check.cu,
// gpu_checks_forward.cpp, gpu_checks_sample.cpp, gpu_checks_int8.cpp,
// gpu_checks_synthetic.cpp, gpu_checks_w4a16.cpp).
void add_ops_checks(std::vector<Check>* out);
void add_gemm_checks(std::vector<Check>* out);
void add_fp8_checks(std::vector<Check>* out);
void add_forward_checks(std::vector<Check>* out);
void add_sample_checks(std::vector<Check>* out);
void add_int8_checks(std::vector<Check>* out);
void add_synthetic_checks(std::vector<Check>* out);
void add_w4a16_checks(std::vector<Check>* out);

}  // namespace prima::gpu_checks
