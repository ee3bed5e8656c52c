// `prima profile --model PATH --out FILE`: measures the real CPU backend on this machine
// (operators over batch sizes and context lengths, whole forward steps) and writes the
// calibration the simulator's cost model reads (backends/real/profiler.h).
#include <boost/program_options.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "backends/real/profiler.h"
#include "cli/commands.h"

namespace po = boost::program_options;

namespace prima::cli {
namespace {

bool parse_int_list(const std::string& s, std::vector<int>* out) {
  out->clear();
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) {
    try {
      std::size_t used = 0;
      int v = std::stoi(item, &used);
      if (used != item.size() || v <= 0) return false;
      out->push_back(v);
    } catch (...) {
      return false;
    }
  }
  return !out->empty();
}

}  // namespace

int cmd_profile(const Args& args) {
  po::options_description opts("prima profile --model PATH --out FILE [options]");
  opts.add_options()("help,h", "show this help")("model", po::value<std::string>(),
                                                 "GGUF model file (llama architecture)")(
      "out", po::value<std::string>(), "calibration file to write (JSON)")(
      "threads", po::value<int>()->default_value(0), "kernel threads (0: all cores)")(
      "batches", po::value<std::string>()->default_value("1,2,4,8,16,32,64,128"),
      "token counts for the operator timings")(
      "contexts", po::value<std::string>()->default_value("128,512,1024,2048"),
      "context lengths for the attention timings")("repeats", po::value<int>()->default_value(5),
                                                   "timed runs per measurement (median)")(
      "name", po::value<std::string>()->default_value(""),
      "hardware name in the calibration (default cpu:<CPU model>)")(
      "manifest", po::value<std::string>()->default_value(""), "sha256 manifest of the model")(
      "repack",
      "measure the packed-weight kernels (the default where the CPU has them, as prima generate "
      "runs them)")("no-repack", "measure the GGUF-layout kernels (prima generate --no-repack)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(opts).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "prima profile: %s (see prima profile --help)\n", e.what());
    return kExitBadInput;
  }
  if (vm.count("help")) {
    std::cout << opts << R"(
Measures this machine with the real CPU backend: memory bandwidth, every linear layer (and
the LM head) over batch sizes, attention over context lengths, norms/RoPE/SwiGLU, and whole
forward steps (decode batches, prefill chunks). Fits the cost model's efficiency shares
(gemm_memory, gemm_compute, attention_memory) to three of the steps and prints how well the
fitted model predicts the others. FILE is a calibration any scenario can use:
  "calibration": "FILE"  with  "topology": {..., "gpu": <FILE's "hardware" object>}
so a simulated replica of this CPU can be compared with the real run (docs/real-backend.md).

examples:
  prima profile --model models/SmolLM2-135M-Instruct.Q4_1.gguf --out out/cpu_calibration.json
  prima profile --model M.gguf --out cal.json --threads 1 --repeats 3 --batches 1,8,64

Exit codes: 0 ok, 1 a measurement failed, 2 bad input (flags, model file).
)";
    return kExitOk;
  }
  if (!vm.count("model") || !vm.count("out")) {
    std::fprintf(stderr, "prima profile: --model and --out are required (see --help)\n");
    return kExitBadInput;
  }
  real::ProfileOptions po_;
  po_.model_path = vm["model"].as<std::string>();
  po_.manifest = vm["manifest"].as<std::string>();
  po_.threads = vm["threads"].as<int>();
  po_.repeats = vm["repeats"].as<int>();
  po_.name = vm["name"].as<std::string>();
  if (vm.count("repack") && vm.count("no-repack")) {
    std::fprintf(stderr, "prima profile: --repack and --no-repack exclude each other\n");
    return kExitBadInput;
  }
  po_.repack = vm.count("no-repack") == 0;
  if (po_.threads < 0 || po_.repeats < 1) {
    std::fprintf(stderr, "prima profile: --threads must be >= 0 and --repeats >= 1\n");
    return kExitBadInput;
  }
  if (!parse_int_list(vm["batches"].as<std::string>(), &po_.batches) ||
      !parse_int_list(vm["contexts"].as<std::string>(), &po_.contexts)) {
    std::fprintf(stderr,
                 "prima profile: --batches and --contexts take positive integers separated by "
                 "commas, e.g. 1,8,64\n");
    return kExitBadInput;
  }
  const std::string out = vm["out"].as<std::string>();
  auto r = real::run_profile(
      po_, [](const std::string& line) { std::fprintf(stderr, "profile: %s\n", line.c_str()); });
  if (!r.ok()) {
    std::fprintf(stderr, "prima profile: %s\n", r.status().message().c_str());
    return r.status().code() == StatusCode::kInvalidArgument ||
                   r.status().code() == StatusCode::kNotFound
               ? kExitBadInput
               : kExitFailure;
  }
  std::ofstream f(out);
  if (!f) {
    std::fprintf(stderr, "prima profile: cannot write %s\n", out.c_str());
    return kExitFailure;
  }
  f << real::profile_to_json(*r).dump(1) << "\n";
  const perf::Efficiency& e = r->efficiency;
  std::printf("%s, %d threads (%s kernels), read bandwidth %.1f GB/s\n", r->cpu.c_str(), r->threads,
              r->isa.c_str(), r->mem_bw_Bps / 1e9);
  std::printf("fitted: gemm_memory %.3f, gemm_compute %.3f, attention_memory %.3f\n", e.gemm_memory,
              e.gemm_compute, e.attention_memory);
  std::printf("%-8s %5s %7s %7s %11s %11s %7s\n", "step", "seqs", "tokens", "context",
              "measured_ms", "predicted_ms", "ratio");
  for (const auto& s : r->steps)
    std::printf("%-8s %5d %7d %7d %11.2f %11.2f %7.2f%s\n", s.kind.c_str(), s.seqs, s.tokens,
                s.context, s.seconds * 1e3, s.predicted_s * 1e3, s.predicted_s / s.seconds,
                s.fitted ? "  (fitted)" : "");
  std::printf("wrote %s\n", out.c_str());
  return kExitOk;
}

}  // namespace prima::cli
