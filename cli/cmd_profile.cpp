// `prima profile --model PATH --out FILE`: measures the real CPU backend on this machine
// (operators over batch sizes and context lengths, whole forward steps) and writes its
// hardware profile, the calibration the simulator's cost model reads
// (backends/real/profiler.h); optionally a one-device topology and a scenario of the real
// server on it (backends/real/profile_scenario.h).
#include <fmt/format.h>

#include <boost/program_options.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>

#include "backends/real/profile_scenario.h"
#include "backends/real/profiler.h"
#include "backends/real/real_backend.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/profile_options.h"
#include "cli/serve_options.h"
#include "cli/synthetic_option.h"
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

constexpr const char* kHelp = R"(
Measures this machine with the real CPU backend (or, with --device cuda[:N] or cuda-emu, the
GPU forward pass on that device): memory bandwidth, every linear layer (and
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
  prima profile --model M.gguf --out h100.json --device cuda:0   # a GPU: its bandwidth,
      # launch time and the GPU forward pass's steps, fitted the same way (no CPU operators)
  prima profile --synthetic llama-3-8b:bf16 --device cuda:0 --out out/h100-8b/profile.json
      # Llama 3 8B's shape with random BF16 weights (made once, 16 GB, in
      # ~/.cache/prima/synthetic): on a device it adds decode at batch 32 and 64 and
      # prefill of 1,024 and 2,048 tokens to the steps

Exit codes: 0 ok, 1 a measurement failed, 2 bad input (flags, model file).
)";

// The output files' directories, made before minutes of measuring.
Status make_output_dirs(const ProfileOptions& o) {
  for (const auto& [flag, path] :
       {std::pair{"out", o.out}, std::pair{"topology-out", o.topology_out},
        std::pair{"scenario-out", o.scenario_out}}) {
    const fs::path dir = fs::path(path).parent_path();
    std::error_code ec;
    if (!dir.empty()) fs::create_directories(dir, ec);
    if (ec)
      return invalid_argument(
          fmt::format("--{}: cannot create {}: {}", flag, dir.string(), ec.message()));
  }
  return ok_status();
}

// What was measured and how well the fitted model predicts each step, on stdout.
void print_profile(const real::ProfileResult& r) {
  const perf::Efficiency& e = r.efficiency;
  if (r.device.empty())
    std::printf("%s, %d threads (%s kernels), read bandwidth %.1f GB/s\n", r.cpu.c_str(), r.threads,
                r.isa.c_str(), r.mem_bw_Bps / 1e9);
  else
    std::printf("%s: bandwidth %.1f GB/s, one kernel launch %.1f us\n", r.device.c_str(),
                r.mem_bw_Bps / 1e9, r.dispatch_s * 1e6);
  std::printf("fitted: gemm_memory %.3f, gemm_compute %.3f, attention_memory %.3f\n", e.gemm_memory,
              e.gemm_compute, e.attention_memory);
  std::printf("%-8s %5s %7s %7s %11s %11s %7s\n", "step", "seqs", "tokens", "context",
              "measured_ms", "predicted_ms", "ratio");
  for (const auto& s : r.steps)
    std::printf("%-8s %5d %7d %7d %11.2f %11.2f %7.2f%s\n", s.kind.c_str(), s.seqs, s.tokens,
                s.context, s.seconds * 1e3, s.predicted_s * 1e3, s.predicted_s / s.seconds,
                s.fitted ? "  (fitted)" : "");
  std::printf("fidelity: %s\n", real::to_profile(r).fidelity.summary().c_str());
}

// The simulated twin: a topology of this machine and a scenario of the real server on it
// (each only where its flag asked for it); the exit code.
int write_twin(const ProfileOptions& o, const real::ProfileResult& r) {
  const std::string& topo_out = o.topology_out;
  const std::string& scen_out = o.scenario_out;
  const nlohmann::json topology = real::single_device_topology(
      r, topo_out.empty() ? "profiled_device" : fs::path(topo_out).stem().string());
  if (!topo_out.empty()) {
    if (!write_json(topo_out, topology)) {
      std::fprintf(stderr, "prima profile: cannot write %s\n", topo_out.c_str());
      return kExitFailure;
    }
    std::printf("wrote %s\n", topo_out.c_str());
  }
  if (scen_out.empty()) return kExitOk;
  const std::string scen_dir = fs::path(scen_out).parent_path().string();
  auto sc = real::profile_scenario(r, topology, default_server_limits(r.model),
                                   path_from(o.out, scen_dir),
                                   path_from(real::engine_path_for(o.out), scen_dir), scen_out);
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
  return kExitOk;
}

// Measures, writes the profile (and the twin), prints the table; the exit code.
int profile_machine(const ProfileOptions& o) {
  if (Status st = make_output_dirs(o); !st.ok()) {
    std::fprintf(stderr, "prima profile: %s\n", st.message().c_str());
    return kExitBadInput;
  }
  auto r = real::run_profile(o.profile, [](const std::string& line) {
    std::fprintf(stderr, "profile: %s\n", line.c_str());
  });
  if (!r.ok()) return fail_with("prima profile", r.status());
  const std::string engine_out = real::engine_path_for(o.out);
  if (!write_json(o.out, real::profile_to_json(*r)) ||
      !write_json(engine_out, real::engine_to_json(*r))) {
    std::fprintf(stderr, "prima profile: cannot write %s\n", o.out.c_str());
    return kExitFailure;
  }
  print_profile(*r);
  std::printf("wrote %s (the hardware) and %s (the engine)\n", o.out.c_str(), engine_out.c_str());
  return write_twin(o, *r);
}

}  // namespace

int cmd_profile(const Args& args) {
  po::variables_map vm;
  if (auto done = parse_command_line({"prima profile", profile_flags(), {}, {}, kHelp}, args, &vm))
    return *done;
  ProfileOptions o = profile_options(vm);
  if (Status st = o.validate(); !st.ok()) return fail_with("prima profile", st);
  if (auto code = device_unavailable("prima profile", o.device)) return *code;
  if (auto code =
          resolve_synthetic("prima profile", o.synthetic,
                            o.device.spec().kind != real::DeviceKind::kCpu, &o.profile.model_path))
    return *code;
  if (o.device.spec().kind == real::DeviceKind::kCpu) return profile_machine(o);
  ProfileOptions on_device = o;  // the GPU forward pass takes the GGUF layout, not panels
  on_device.profile.device_forward = device_forward(o.device.spec(), o.device.quant());
  on_device.profile.repack = false;
  switch (o.device.quant()) {
    case real::WeightQuant::kFp8:
      on_device.profile.weights_as = model::Quantization::kFP8;
      break;
    case real::WeightQuant::kInt8:
      on_device.profile.weights_as = model::Quantization::kW8A8;
      break;
    case real::WeightQuant::kW4A16:
      on_device.profile.weights_as = model::Quantization::kW4A16;
      break;
    case real::WeightQuant::kNone:
      break;
  }
  return profile_machine(on_device);
}

}  // namespace prima::cli
