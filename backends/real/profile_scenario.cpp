// The simulated twin of a profiled machine: its topology and scenario (profile_scenario.h).
#include "backends/real/profile_scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "engine/plan/parallel_plan.h"
#include "engine/scenario/scenario.h"

namespace prima::real {
namespace {

using config::Json;

std::string bandwidth(double Bps) {
  return fmt::format("{:.3f}GB/s", Bps / 1e9);
}

// The model as the scenario's inline object: the architecture read from the GGUF file.
Json model_json(const model::ModelSpec& m) {
  return Json{{"name", m.name},
              {"source", m.source},
              {"layers", m.layers},
              {"hidden", m.hidden},
              {"heads", m.heads},
              {"kv_heads", m.kv_heads},
              {"head_dim", m.head_dim},
              {"ffn", m.ffn},
              {"vocab", m.vocab},
              {"tied_embeddings", m.tied_embeddings},
              {"max_context", m.max_context}};
}

// The memory fit the simulator computes for scenario `j` (as simulation.cpp does).
Result<plan::MemoryFit> fit_of(const Json& j, const std::string& file, const std::string& dir) {
  auto sc = scenario::parse_scenario(j, file, dir);
  if (!sc.ok()) return sc.status();
  return plan::check_plan(sc->model, sc->quantization, sc->topology, sc->plan, sc->memory,
                          sc->scheduler.max_num_batched_tokens, sc->max_model_len);
}

}  // namespace

Json single_device_topology(const ProfileResult& r, const std::string& name) {
  const perf::Profile p = to_profile(r);
  // A device-to-host or device-to-device copy on a CPU is a copy within host memory.
  const std::string copy = bandwidth(r.mem_bw_Bps / 2);
  const std::string copy_source =
      "a copy within host memory: half the measured read bandwidth (it reads and writes)";
  const std::string unused = "unused with one node; a placeholder the topology schema requires";
  return Json{
      {"name", name},
      {"description",
       fmt::format("{} as one device running prima's real CPU backend ({} threads); written by "
                   "prima profile",
                   r.cpu, r.threads)},
      {"source", p.source},
      {"gpu", *p.gpu},
      {"nodes", 1},
      {"node",
       {{"gpus", 1},
        {"cpu", r.cpu},
        {"host_memory", (*p.gpu)["memory"]},
        {"host_memory_bandwidth", bandwidth(r.mem_bw_Bps)},
        {"source", "the device is the host: its memory and measured read bandwidth"},
        {"nvlink", {{"bandwidth", copy}, {"source", copy_source + "; unused with one device"}}},
        {"pcie", {{"bandwidth", copy}, {"source", "KV swap to host memory is " + copy_source}}},
        {"nic", {{"bandwidth", copy}, {"source", unused}}}}},
      {"fabric", {{"type", "fat_tree"}, {"link", {{"bandwidth", copy}, {"source", unused}}}}}};
}

Result<Json> profile_scenario(const ProfileResult& r, const Json& topology,
                              const ServedLimits& limits, const std::string& calibration_path,
                              const std::string& engine_path, const std::string& scenario_path) {
  const std::filesystem::path path(scenario_path);
  const std::string name = path.stem().string();
  const std::string dir = path.parent_path().empty() ? "." : path.parent_path().string();
  const int ctx = limits.max_model_len;
  if (ctx < 8 || limits.block_size < 1 || limits.kv_blocks < 1 || limits.max_num_seqs < 1)
    return invalid_argument(fmt::format(
        "cannot write a scenario for a context of {} tokens, {} KV blocks of {} tokens and "
        "max-num-seqs {}",
        ctx, limits.kv_blocks, limits.block_size, limits.max_num_seqs));
  // Prompts and outputs that fit the context together: prompt <= ctx / 2, output <= ctx / 4.
  const int prompt_max = std::min(1024, ctx / 2), output_max = std::min(256, ctx / 4);
  Json j = {
      {"name", name},
      {"description",
       fmt::format("{} ({}) served by prima serve --backend real with its default limits on {}, "
                   "simulated with the profile prima profile measured there ({} threads)",
                   r.model.name, std::filesystem::path(r.model_file).filename().string(), r.cpu,
                   r.threads)},
      {"seed", 1},
      {"duration", "60s"},
      {"model", model_json(r.model)},
      {"quantization", model::quantization_name(r.quantization)},
      {"topology", topology},
      {"deployment", {{"replicas", 1}, {"gpu_memory_utilization", 1.0}}},
      {"scheduler",
       {{"max_num_seqs", limits.max_num_seqs},
        {"max_num_batched_tokens", limits.max_num_batched_tokens},
        {"block_size", limits.block_size},
        {"max_model_len", ctx}}},
      {"workload",
       {{"arrival",
         {{"type", "closed_loop"}, {"users", limits.max_num_seqs}, {"think_time_s", "1s"}}},
        {"prompt_tokens",
         {{"type", "lognormal"},
          {"median", std::max(1, prompt_max / 4)},
          {"sigma", 0.5},
          {"max", prompt_max}}},
        {"output_tokens",
         {{"type", "lognormal"},
          {"median", std::max(1, output_max / 4)},
          {"sigma", 0.5},
          {"max", output_max}}}}},
      {"calibration", calibration_path},
      {"engine", engine_path}};

  // The device's memory is the whole host memory: use the share of it that holds the weights,
  // the activation buffers and exactly the real server's KV blocks (half a token of slack
  // against rounding; the KV capacity is floor(bytes / bytes per token)).
  auto full = fit_of(j, scenario_path, dir);
  if (!full.ok()) return full.status();
  const double tokens = double(limits.kv_blocks) * limits.block_size;
  const double util =
      (full->weight_bytes + full->activation_bytes + (tokens + 0.5) * full->kv_bytes_per_token) /
      full->hbm_bytes;
  if (!(util > 0) || util > 1)
    return failed_precondition(fmt::format(
        "the real server's KV cache ({} blocks of {} tokens) does not fit in {:.1f} GB of host "
        "memory",
        limits.kv_blocks, limits.block_size, full->hbm_bytes / 1e9));
  j["deployment"]["gpu_memory_utilization"] = util;
  auto fit = fit_of(j, scenario_path, dir);
  if (!fit.ok()) return fit.status();
  if (!fit->fits || fit->kv_tokens / limits.block_size != limits.kv_blocks)
    return internal_error(fmt::format("sizing the simulated KV cache to {} blocks gave {} ({})",
                                      limits.kv_blocks, fit->kv_tokens / limits.block_size,
                                      fit->verdict));
  return j;
}

}  // namespace prima::real
