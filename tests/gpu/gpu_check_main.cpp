// prima_gpu_check: runs every device check (gpu_checks.h) without GoogleTest, prints one line
// per check and a summary, and writes a JSON summary to the file named by --json (if given).
// Exit 0: all passed; 1: a check failed; 77: no CUDA device (nothing ran). Used by
// scripts/gpu_check.sh on GPU machines that have no GoogleTest.
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <string>

#include "kernels/cuda/device_info.h"
#include "tests/gpu/gpu_checks.h"

int main(int argc, char** argv) {
  using namespace prima::gpu_checks;
  std::string json_path;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--json") == 0) json_path = argv[i + 1];
  const std::string why = unavailable_reason();
  const std::string device = why.empty() ? prima::cuda::device_name(0) : "";
  std::string checks_json;
  int passed = 0, failed = 0;
  if (why.empty()) {
    for (const Check& c : all_checks()) {
      const auto t0 = std::chrono::steady_clock::now();
      CheckResult r;
      try {
        r = c.run();
      } catch (const std::exception& e) {
        r = {false, 0, e.what()};
      }
      const double ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      (r.ok ? passed : failed) += 1;
      std::printf("%-16s %s  max err/tol %.3g  %.1f ms  %s\n", c.name, r.ok ? "ok  " : "FAIL",
                  r.max_err, ms, r.detail.c_str());
      char num[96];
      std::snprintf(num, sizeof num, "\"max_err_over_tol\": %.6g, \"ms\": %.3f", r.max_err, ms);
      checks_json += std::string(checks_json.empty() ? "" : ",\n") +
                     "    {\"name\": " + json_string(c.name) +
                     ", \"ok\": " + (r.ok ? "true" : "false") + ", " + num +
                     ", \"detail\": " + json_string(r.detail) + "}";
    }
    std::printf("gpu checks on %s: %d passed, %d failed\n", device.c_str(), passed, failed);
  } else {
    std::printf("gpu checks skipped: %s\n", why.c_str());
  }
  if (!json_path.empty()) {
    std::ofstream out(json_path);
    out << "{\n  \"device\": " << json_string(device) << ",\n  \"skipped\": " << json_string(why)
        << ",\n  \"passed\": " << passed << ",\n  \"failed\": " << failed << ",\n  \"checks\": [\n"
        << checks_json << "\n  ]\n}\n";
  }
  if (!why.empty()) return 77;
  return failed == 0 ? 0 : 1;
}
