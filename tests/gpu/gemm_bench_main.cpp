// prima_gpu_gemm_bench: the throughput of the build's dense GEMM (kernels/cuda/gemm.h
// make_gemm(): cuBLASLt on a device, the reference kernel on the CPU execution layer) on the
// large shapes of transformer layers, in BF16 and in FP8 E4M3 with per-tensor scales (sm_89 and
// later), both with BF16 outputs as the forward pass writes them, and in INT8 into INT32 (the
// W8A8 products, before their scales; its "TFLOPs" are tera integer operations). Per shape and
// type: the median of --iters runs timed by CUDA events after --warmup untimed ones, in TFLOP/s
// (2mnk flops a run), and a check of sampled outputs against their sums in double, so that a fast
// wrong GEMM does not pass. Inputs are random (the tensor cores' power, and so their clocks,
// depend on the data). scripts/gpu_check.sh runs it and puts its JSON under "gemm".
//   prima_gpu_gemm_bench --json gemm.json
//   prima_gpu_gemm_bench --shapes 8192x8192x8192,2048x14336x4096 --types fp8,int8 --iters 20
// Exit: 0 every GEMM ran and checked, 1 one failed, 2 bad flags, 77 no CUDA device.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cpu/quant.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/fp8_e4m3.h"
#include "kernels/cuda/gemm.h"
#include "tests/gpu/check_support.h"
#include "tests/gpu/gpu_checks.h"

namespace {

using prima::cuda::GemmShape;
using prima::cuda::GemmType;
using prima::gpu_checks::cuda_ok;
using prima::gpu_checks::DeviceBuffer;

struct Shape {
  std::int64_t m, n, k;
  std::string what;
};

// m tokens x n outputs x k inputs: square products, and the linear layers of Llama 3 8B and
// 70B at a 2,048- and 8,192-token prefill.
const std::vector<Shape> kDefaultShapes = {
    {8192, 8192, 8192, "square"},
    {16384, 16384, 16384, "square"},
    {2048, 6144, 4096, "Llama 3 8B QKV, 2,048 tokens"},
    {2048, 14336, 4096, "Llama 3 8B gate/up, 2,048 tokens"},
    {2048, 4096, 14336, "Llama 3 8B down, 2,048 tokens"},
    {8192, 28672, 8192, "Llama 3 70B gate/up, 8,192 tokens"},
    {8192, 8192, 28672, "Llama 3 70B down, 8,192 tokens"},
};

struct Options {
  std::vector<Shape> shapes = kDefaultShapes;
  std::vector<std::string> types = {"bf16", "fp8", "int8"};
  int iters = 10, warmup = 3;
  std::string json;
};

bool parse_int(const std::string& s, std::int64_t* v) {
  char* end = nullptr;
  const long long x = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || x < 1) return false;
  *v = x;
  return true;
}

// "" or why the flags are bad.
std::string parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--help" || a == "-h") return "help";
    if (i + 1 >= argc) return a + " needs a value";
    const std::string v = argv[++i];
    if (a == "--json") {
      o->json = v;
    } else if (a == "--shapes") {
      o->shapes.clear();
      std::stringstream ss(v);
      std::string item;
      while (std::getline(ss, item, ',')) {
        Shape s{0, 0, 0, "given"};
        const auto x1 = item.find('x'), x2 = item.find('x', x1 + 1);
        if (x1 == std::string::npos || x2 == std::string::npos ||
            !parse_int(item.substr(0, x1), &s.m) ||
            !parse_int(item.substr(x1 + 1, x2 - x1 - 1), &s.n) ||
            !parse_int(item.substr(x2 + 1), &s.k))
          return "--shapes: '" + item + "' is not MxNxK (positive integers)";
        o->shapes.push_back(s);
      }
      if (o->shapes.empty()) return "--shapes: no shape";
    } else if (a == "--types") {
      o->types.clear();
      std::stringstream ss(v);
      std::string t;
      while (std::getline(ss, t, ',')) {
        if (t != "bf16" && t != "fp8" && t != "int8")
          return "--types: '" + t + "' is not bf16, fp8 or int8";
        o->types.push_back(t);
      }
      if (o->types.empty()) return "--types: no type";
    } else if (a == "--iters" || a == "--warmup") {
      std::int64_t n = 0;
      if (!parse_int(v, &n) || n > 100000) return a + ": '" + v + "' is not a count >= 1";
      (a == "--iters" ? o->iters : o->warmup) = static_cast<int>(n);
    } else {
      return "unknown flag " + a;
    }
  }
  return "";
}

struct Result {
  Shape shape;
  std::string type, detail;
  bool ok = false, skipped = false;
  double ms = 0, tflops = 0, max_err_over_tol = 0;
};

// Random inputs in the type's encoding: element i is entry hash(i) of a table of 65,536 normal
// samples (filling hundreds of millions of elements with fresh samples would take the host
// longer than the GEMMs take); value(i) is what the check sums.
class Inputs {
 public:
  Inputs(std::int64_t count, const std::string& type, float scale, std::uint32_t seed)
      : seed_(seed) {
    const bool fp8 = type == "fp8", int8 = type == "int8";
    std::mt19937 rng(seed);
    std::normal_distribution<float> N(0.0f, 1.0f);
    for (int t = 0; t < kTable; ++t) {
      const float v = N(rng);
      if (int8) {  // N(0, 32^2) as codes in [-127, 127]
        const int q = std::clamp(int(std::lrint(v * 32.0f)), -127, 127);
        codes_[t] = std::uint16_t(std::uint8_t(std::int8_t(q)));
        values_[t] = float(q);
      } else if (fp8) {
        codes_[t] = prima::cuda::fp8_e4m3_encode_scaled(v, scale);
        values_[t] = prima::cuda::fp8_e4m3_decode(codes_[t]) * scale;
      } else {
        codes_[t] = prima::kernels::fp32_to_bf16(v);
        values_[t] = prima::kernels::bf16_to_fp32(codes_[t]);
      }
    }
    bytes_.resize(std::size_t(count) * (fp8 || int8 ? 1 : 2));
    if (fp8 || int8)
      for (std::int64_t i = 0; i < count; ++i) bytes_[i] = std::uint8_t(codes_[entry(i)]);
    else
      for (std::int64_t i = 0; i < count; ++i) std::memcpy(&bytes_[2 * i], &codes_[entry(i)], 2);
  }
  const std::vector<std::uint8_t>& bytes() const { return bytes_; }
  float value(std::int64_t i) const { return values_[entry(i)]; }

 private:
  static constexpr int kTable = 1 << 16;
  int entry(std::int64_t i) const {
    std::uint64_t h = std::uint64_t(i) * 0x9E3779B97F4A7C15ull + seed_;
    return int((h ^ (h >> 29)) >> 48);
  }
  std::uint32_t seed_;
  std::vector<std::uint16_t> codes_ = std::vector<std::uint16_t>(kTable);
  std::vector<float> values_ = std::vector<float>(kTable);
  std::vector<std::uint8_t> bytes_;
};

Result bench(const Shape& s, const std::string& type, const Options& o, prima::cuda::Gemm* g) {
  Result r;
  r.shape = s;
  r.type = type;
  const bool fp8 = type == "fp8", int8 = type == "int8";
  if (fp8) {
    cudaDeviceProp prop{};
    cuda_ok(cudaGetDeviceProperties(&prop, 0), "cudaGetDeviceProperties");
    if (prop.major * 10 + prop.minor < 89) {
      r.ok = r.skipped = true;
      r.detail = "skipped: sm_" + std::to_string(prop.major * 10 + prop.minor) +
                 " has no FP8 tensor cores (sm_89 and later)";
      return r;
    }
  }
  // The scale (both inputs') that maps N(0, 1) samples (|x| < 6 in practice) into E4M3's range.
  const float scale = 6.0f / prima::cuda::kFp8E4M3Max;
  const Inputs x(s.m * s.k, type, scale, 11), w(s.n * s.k, type, scale, 12);
  DeviceBuffer dx(x.bytes()), dw(w.bytes()), dy(std::size_t(s.m * s.n) * (int8 ? 4 : 2));
  DeviceBuffer scales(std::vector<float>{scale, scale});
  GemmShape gs{s.m, s.n, s.k, fp8 ? GemmType::kFP8E4M3 : GemmType::kBF16, GemmType::kBF16, 1.0f};
  if (int8) gs.in = GemmType::kI8, gs.out = GemmType::kI32;
  if (fp8) {
    gs.x_scale = scales.as<float>();
    gs.w_scale = scales.as<float>() + 1;
  }
  auto run = [&] {
    if (std::string e = g->run(gs, dx.as<void>(), dw.as<void>(), dy.as<void>(), nullptr);
        !e.empty())
      throw std::runtime_error(std::string(g->name()) + " run: " + e);
  };
  for (int i = 0; i < o.warmup; ++i) run();
  cuda_ok(cudaDeviceSynchronize(), "warm-up");
  cudaEvent_t e0, e1;
  cuda_ok(cudaEventCreate(&e0), "cudaEventCreate");
  cuda_ok(cudaEventCreate(&e1), "cudaEventCreate");
  std::vector<double> ms;
  for (int i = 0; i < o.iters; ++i) {
    cuda_ok(cudaEventRecord(e0, nullptr), "cudaEventRecord");
    run();
    cuda_ok(cudaEventRecord(e1, nullptr), "cudaEventRecord");
    cuda_ok(cudaEventSynchronize(e1), "cudaEventSynchronize");
    float t = 0;
    cuda_ok(cudaEventElapsedTime(&t, e0, e1), "cudaEventElapsedTime");
    ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  std::sort(ms.begin(), ms.end());
  r.ms = ms[ms.size() / 2];
  r.tflops = r.ms > 0 ? 2.0 * double(s.m) * double(s.n) * double(s.k) / (r.ms * 1e-3) / 1e12 : 0;

  // Sampled outputs (corners and random positions) against double sums of the inputs' values:
  // float accumulation plus the BF16 output's rounding; INT8's INT32 sums exactly.
  const auto y = dy.read<std::uint16_t>(int8 ? 0 : std::size_t(s.m * s.n));
  const auto yi = dy.read<std::int32_t>(int8 ? std::size_t(s.m * s.n) : 0);
  std::mt19937 rng(13);
  std::vector<std::pair<std::int64_t, std::int64_t>> at = {
      {0, 0}, {s.m - 1, s.n - 1}, {0, s.n - 1}, {s.m - 1, 0}};
  for (int i = 0; i < 28; ++i) at.emplace_back(rng() % s.m, rng() % s.n);
  for (auto [i, j] : at) {
    double sum = 0, sum_abs = 0;
    for (std::int64_t c = 0; c < s.k; ++c) {
      const double p = double(x.value(i * s.k + c)) * w.value(j * s.k + c);
      sum += p;
      sum_abs += std::fabs(p);
    }
    if (int8) {
      if (double(yi[i * s.n + j]) != sum) r.max_err_over_tol = 1e9;
      continue;
    }
    const double got = prima::kernels::bf16_to_fp32(y[i * s.n + j]);
    const double tol = 1e-5 * sum_abs + 8e-3 * std::fabs(sum) + 1e-6;
    r.max_err_over_tol = std::max(r.max_err_over_tol, std::fabs(got - sum) / tol);
  }
  r.ok = r.max_err_over_tol <= 1.0;
  r.detail = std::string(g->name()) +
             (int8  ? " INT8 -> INT32 (TFLOPs: tera integer ops)"
              : fp8 ? " FP8 E4M3 (per-tensor scales) -> BF16"
                    : " BF16 -> BF16") +
             ", median of " + std::to_string(o.iters);
  if (!r.ok)
    r.detail +=
        "; sampled outputs off by up to " + std::to_string(r.max_err_over_tol) + "x the tolerance";
  return r;
}

std::string json_of(const std::string& device, const std::vector<Result>& rs) {
  std::ostringstream j;
  using prima::gpu_checks::json_string;
  j << "{\n  \"device\": " << json_string(device) << ",\n  \"results\": [";
  for (std::size_t i = 0; i < rs.size(); ++i) {
    const Result& r = rs[i];
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "\"m\": %lld, \"n\": %lld, \"k\": %lld, \"type\": \"%s\", \"ok\": %s, "
                  "\"skipped\": %s, \"ms\": %.4f, \"TFLOPs\": %.6g, \"max_err_over_tol\": %.3g",
                  static_cast<long long>(r.shape.m), static_cast<long long>(r.shape.n),
                  static_cast<long long>(r.shape.k), r.type.c_str(), r.ok ? "true" : "false",
                  r.skipped ? "true" : "false", r.ms, r.tflops, r.max_err_over_tol);
    j << (i ? ",\n    {" : "\n    {") << buf << ", \"what\": " << json_string(r.shape.what)
      << ", \"detail\": " << json_string(r.detail) << "}";
  }
  j << "\n  ]\n}\n";
  return j.str();
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const std::string err = parse(argc, argv, &o); !err.empty()) {
    if (err == "help") {
      std::printf(
          "prima_gpu_gemm_bench [--shapes MxNxK,...] [--types bf16,fp8,int8] [--iters N] "
          "[--warmup N] [--json FILE]\n"
          "The build's dense GEMM in TFLOP/s (median of --iters runs, CUDA events), BF16 and\n"
          "FP8 E4M3 inputs with BF16 outputs, INT8 inputs with INT32 outputs; sampled outputs\n"
          "checked against double sums (INT8: exactly).\n");
      return 0;
    }
    std::fprintf(stderr, "prima_gpu_gemm_bench: %s\n", err.c_str());
    return 2;
  }
  const std::string why = prima::gpu_checks::unavailable_reason();
  if (!why.empty()) {
    std::printf("prima_gpu_gemm_bench: skipped: %s\n", why.c_str());
    return 77;
  }
  const std::string device = prima::cuda::device_name(0);
  std::string error;
  auto g = prima::cuda::make_gemm(&error);
  if (!g) {
    std::fprintf(stderr, "prima_gpu_gemm_bench: make_gemm: %s\n", error.c_str());
    return 1;
  }
  std::vector<Result> rs;
  int failed = 0;
  for (const Shape& s : o.shapes)
    for (const std::string& t : o.types) {
      Result r;
      try {
        r = bench(s, t, o, g.get());
      } catch (const std::exception& e) {
        r = Result{};
        r.shape = s;
        r.type = t;
        r.detail = e.what();
      }
      failed += r.ok ? 0 : 1;
      std::printf("%6lldx%6lldx%6lld %-4s %s %9.3f ms %8.4g TFLOP/s  %s%s%s\n",
                  static_cast<long long>(s.m), static_cast<long long>(s.n),
                  static_cast<long long>(s.k), t.c_str(), r.ok ? "ok  " : "FAIL", r.ms, r.tflops,
                  r.detail.c_str(), s.what.empty() ? "" : "; ", s.what.c_str());
      std::fflush(stdout);
      rs.push_back(r);
    }
  if (!o.json.empty()) std::ofstream(o.json) << json_of(device, rs);
  std::printf("prima_gpu_gemm_bench on %s: %zu GEMMs, %d failed\n", device.c_str(), rs.size(),
              failed);
  return failed ? 1 : 0;
}
