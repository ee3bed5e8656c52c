// `prima profile --model PATH --out FILE`: measures the real CPU backend on this machine
// (operators over batch sizes and context lengths, whole forward steps) and writes its
// hardware profile, the calibration the simulator's cost model reads
// (backends/real/profiler.h); optionally a one-device topology and a scenario of the real
// server on it (backends/real/profile_scenario.h).
#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "backends/real/profile_scenario.h"
#include "backends/real/profiler.h"
#include "backends/real/real_backend.h"
#include "cli/commands.h"
#include "cli/serve.h"
#include "engine/cluster/serving_engine.h"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace prima::cli {
namespace {

// The limits `prima serve --backend real --model M` serves with when given no limit flags.
real::ServedLimits default_server_limits(const model::ModelSpec& m) {
  const ServeOptions serve;
  real::RealBackendOptions bo;
  bo.max_num_seqs = serve.max_num_seqs;
  bo.max_model_len = serve.max_model_len;
  real::ServedLimits l;
  l.max_num_seqs = serve.max_num_seqs;
  l.max_num_batched_tokens = cluster::EngineOptions{}.scheduler.max_num_batched_tokens;
  l.block_size = bo.block_size;
  l.max_model_len =
      serve.max_model_len > 0 ? std::min(serve.max_model_len, m.max_context) : m.max_context;
  l.kv_blocks = real::default_kv_blocks(bo, m.max_context);
  return l;
}

// `target` as seen from directory `dir`: a relative path when there is one, else absolute.
std::string path_from(const std::string& target, const std::string& dir) {
  std::error_code ec;
  const fs::path t = fs::weakly_canonical(fs::absolute(target), ec);
  const fs::path d = fs::weakly_canonical(fs::absolute(dir.empty() ? "." : dir), ec);
  const fs::path rel = t.lexically_relative(d);
  return rel.empty() ? t.string() : rel.string();
}

bool write_json(const std::string& path, const nlohmann::json& j) {
  std::ofstream f(path);
  f << j.dump(1) << "\n";
  return static_cast<bool>(f);
}

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
      "out", po::value<std::string>(), "hardware profile to write (JSON)")(
      "topology-out", po::value<std::string>()->default_value(""),
      "also write a one-device topology of this machine (JSON)")(
      "scenario-out", po::value<std::string>()->default_value(""),
      "also write a scenario of prima serve --backend real on it, calibrated by the profile")(
      "threads", po::value<int>()->default_value(0), "kernel threads (0: all cores)")(
      "batches", po::value<std::string>()->default_value("1,2,4,8,16,32,64,128"),
      "token counts for the operator timings")(
      "contexts", po::value<std::string>()->default_value("128,512,1024,2048"),
      "context lengths for the attention timings")("repeats", po::value<int>()->default_value(5),
                                                   "timed runs per measurement (median)")(
      "name", po::value<std::string>()->default_value(""),
      "hardware name of the profile (default cpu:<CPU model>)")(
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
fitted model predicts every step. FILE is a hardware profile (docs/real-backend.md): the
fitted "efficiency", the "gpu" object of this CPU for a topology, the "fidelity" (the
fitted model's median, p90 and max error on the measured steps) and the "measurements".
A scenario uses it as  "calibration": "FILE"  with a topology whose gpu is FILE's "gpu".
--topology-out writes a one-node, one-device topology of this machine; --scenario-out a
scenario of the profiled model on it, served as prima serve --backend real serves it by
default (its limits and KV cache) and calibrated by FILE: prima simulate on it is the
simulated twin of this machine.

examples:
  prima profile --model models/SmolLM2-135M-Instruct.Q4_1.gguf --out out/cpu/profile.json \
      --topology-out out/cpu/topology.json --scenario-out out/cpu/scenario.json
  prima simulate out/cpu/scenario.json      # report.json's "fidelity" is the profile's
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
  // The output directories, before minutes of measuring.
  for (const char* flag : {"out", "topology-out", "scenario-out"}) {
    const fs::path dir = fs::path(vm[flag].as<std::string>()).parent_path();
    std::error_code ec;
    if (!dir.empty()) fs::create_directories(dir, ec);
    if (ec) {
      std::fprintf(stderr, "prima profile: --%s: cannot create %s: %s\n", flag, dir.c_str(),
                   ec.message().c_str());
      return kExitBadInput;
    }
  }
  auto r = real::run_profile(
      po_, [](const std::string& line) { std::fprintf(stderr, "profile: %s\n", line.c_str()); });
  if (!r.ok()) {
    std::fprintf(stderr, "prima profile: %s\n", r.status().message().c_str());
    return r.status().code() == StatusCode::kInvalidArgument ||
                   r.status().code() == StatusCode::kNotFound
               ? kExitBadInput
               : kExitFailure;
  }
  if (!write_json(out, real::profile_to_json(*r))) {
    std::fprintf(stderr, "prima profile: cannot write %s\n", out.c_str());
    return kExitFailure;
  }
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
  std::printf("fidelity: %s\n", real::to_profile(*r).fidelity.summary().c_str());
  std::printf("wrote %s\n", out.c_str());

  // The simulated twin: a topology of this machine and a scenario of the real server on it.
  const std::string topo_out = vm["topology-out"].as<std::string>();
  const std::string scen_out = vm["scenario-out"].as<std::string>();
  const nlohmann::json topology = real::single_device_topology(
      *r, topo_out.empty() ? "profiled_device" : fs::path(topo_out).stem().string());
  if (!topo_out.empty()) {
    if (!write_json(topo_out, topology)) {
      std::fprintf(stderr, "prima profile: cannot write %s\n", topo_out.c_str());
      return kExitFailure;
    }
    std::printf("wrote %s\n", topo_out.c_str());
  }
  if (!scen_out.empty()) {
    const std::string scen_dir = fs::path(scen_out).parent_path().string();
    auto sc = real::profile_scenario(*r, topology, default_server_limits(r->model),
                                     path_from(out, scen_dir), scen_out);
    if (!sc.ok()) {
      std::fprintf(stderr, "prima profile: --scenario-out %s: %s\n", scen_out.c_str(),
                   sc.status().message().c_str());
      return kExitFailure;
    }
    if (!write_json(scen_out, *sc)) {
      std::fprintf(stderr, "prima profile: cannot write %s\n", scen_out.c_str());
      return kExitFailure;
    }
    std::printf("wrote %s (simulate it: prima simulate %s)\n", scen_out.c_str(), scen_out.c_str());
  }
  return kExitOk;
}

}  // namespace prima::cli
