// Placement of replicas on a topology and parsing of the deployment object (parallel_plan.h).
#include "engine/plan/parallel_plan.h"

namespace prima::plan {

std::vector<DeviceId> ReplicaPlacement::all() const {
  std::vector<DeviceId> out;
  for (const auto& stage : devices) out.insert(out.end(), stage.begin(), stage.end());
  return out;
}

Result<std::vector<ReplicaPlacement>> place(const ParallelPlan& p, const Topology& t) {
  if (p.tensor_parallel < 1 || p.pipeline_parallel < 1 || p.replicas < 1)
    return invalid_argument("plan: tensor_parallel, pipeline_parallel and replicas must be >= 1");
  const int need = p.gpus_per_replica() * p.replicas, have = t.total_gpus();
  if (need > have)
    return failed_precondition("plan needs " + std::to_string(p.gpus_per_replica()) +
                               " GPUs per replica x " + std::to_string(p.replicas) +
                               " replicas = " + std::to_string(need) + ", topology " + t.name +
                               " has " + std::to_string(have));
  if (p.data_parallel < 1 || p.expert_parallel < 1 || p.context_parallel < 1)
    return invalid_argument(
        "plan: data_parallel, expert_parallel and context_parallel must be >= 1");
  const int gpn = t.node.gpus, tp = p.gpus_per_stage();
  std::vector<ReplicaPlacement> out(static_cast<size_t>(p.replicas));
  for (int r = 0; r < p.replicas; ++r) {
    out[static_cast<size_t>(r)].replica = r;
    out[static_cast<size_t>(r)].tp_group = p.tensor_parallel;
    out[static_cast<size_t>(r)].all_to_all = p.expert_parallel > 1 || p.context_parallel > 1;
    out[static_cast<size_t>(r)].devices.resize(static_cast<size_t>(p.pipeline_parallel));
  }
  const bool stage_major = p.placement == Placement::kStageMajor;
  const int outer = stage_major ? p.pipeline_parallel : p.replicas;
  const int inner = stage_major ? p.replicas : p.pipeline_parallel;
  int cursor = 0;
  for (int i = 0; i < outer; ++i) {
    for (int k = 0; k < inner; ++k) {
      const int r = stage_major ? k : i, s = stage_major ? i : k;
      // A stage's group never straddles a node when it fits in one; a larger one starts on a node.
      if (tp <= gpn && cursor % gpn + tp > gpn) cursor += gpn - cursor % gpn;
      if (tp > gpn && cursor % gpn != 0) cursor += gpn - cursor % gpn;
      if (cursor + tp > have)
        return failed_precondition(
            "plan: stages of " + std::to_string(tp) + " GPUs (tp x dp) do not pack into " +
            std::to_string(t.nodes) + " nodes of " + std::to_string(gpn) + " GPUs (topology " +
            t.name + "): replica " + std::to_string(r) + " stage " + std::to_string(s) +
            " finds no room; use a tensor_parallel x data_parallel that divides " +
            std::to_string(gpn));
      std::vector<DeviceId>& group = out[static_cast<size_t>(r)].devices[static_cast<size_t>(s)];
      for (int g = 0; g < tp; ++g) group.push_back(cursor + g);
      cursor += tp;
    }
  }
  return out;
}

void parse_deployment(const config::JsonReader& r, ParallelPlan* plan, MemoryOptions* mem) {
  if (auto ps = r.optional_object("parallel_strategy")) {
    plan->tensor_parallel = static_cast<int>(ps->positive_integer("tensor_parallel", 1));
    plan->pipeline_parallel = static_cast<int>(ps->positive_integer("pipeline_parallel", 1));
    plan->data_parallel = static_cast<int>(ps->positive_integer("data_parallel", 1));
    plan->expert_parallel = static_cast<int>(ps->positive_integer("expert_parallel", 1));
    plan->context_parallel = static_cast<int>(ps->positive_integer("context_parallel", 1));
    plan->micro_batch = static_cast<int>(ps->non_negative_integer("micro_batch", 0));
    ps->finish();
  }
  if (auto mo = r.optional_object("memory_optim")) {
    mem->activation_checkpointing = mo->boolean("activation_checkpointing", false);
    mem->cpu_offload = mo->boolean("cpu_offload", false);
    mo->finish();
  }
  plan->replicas = static_cast<int>(r.positive_integer("replicas", plan->replicas));
  plan->placement = r.one_of("placement", {"packed", "stage_major"}, "packed") == "stage_major"
                        ? Placement::kStageMajor
                        : Placement::kPacked;
  const double util = r.positive_number("gpu_memory_utilization", mem->gpu_memory_utilization);
  if (util > 1)
    r.fail("gpu_memory_utilization",
           "expected a share of HBM in (0, 1], got " + std::to_string(util));
  mem->gpu_memory_utilization = util;
  const std::string kv = r.one_of("kv_cache_dtype", {"fp16", "bf16", "fp8", "int8"}, "fp16");
  mem->kv_bytes_per_element = (kv == "fp16" || kv == "bf16") ? 2 : 1;
  r.finish();
}

}  // namespace prima::plan
