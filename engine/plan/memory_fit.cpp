// check_plan: divisibility, GPU count and the per-GPU memory budget of a plan
// (parallel_plan.h; equations in docs/cost-model.md, "Memory fit").
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/plan/parallel_plan.h"

namespace prima::plan {
namespace {

std::string gb(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  return buf;
}

// Rows of logits the activation budget reserves (fp32, vocab / tp wide): vLLM's default
// max_num_seqs, since only each sequence's last row goes through the LM head.
constexpr double kLogitRows = 256;

}  // namespace

int kv_copies(const model::ModelSpec& m, int tp) {
  if (m.kv_lora_rank > 0) return tp;
  return m.kv_heads > 0 && tp > m.kv_heads ? tp / m.kv_heads : 1;
}

namespace {

Status check_divisibility(const model::ModelSpec& m, const ParallelPlan& p) {
  const int tp = p.tensor_parallel, pp = p.pipeline_parallel;
  if (tp < 1 || pp < 1 || p.replicas < 1 || p.micro_batch < 0)
    return invalid_argument(
        "plan: tensor_parallel, pipeline_parallel and replicas must be >= 1 "
        "and micro_batch >= 0");
  if (m.heads % tp != 0)
    return invalid_argument(m.name + ": " + std::to_string(m.heads) +
                            " attention heads are not divisible by tensor_parallel " +
                            std::to_string(tp) + "; tensor_parallel must divide the head count");
  if (m.kv_lora_rank == 0) {
    if (tp <= m.kv_heads && m.kv_heads % tp != 0)
      return invalid_argument(m.name + ": " + std::to_string(m.kv_heads) +
                              " KV heads are not divisible by tensor_parallel " +
                              std::to_string(tp));
    if (tp > m.kv_heads && tp % m.kv_heads != 0)
      return invalid_argument(m.name + ": tensor_parallel " + std::to_string(tp) + " exceeds its " +
                              std::to_string(m.kv_heads) +
                              " KV heads and is not a multiple of them (heads are replicated "
                              "only tp / kv_heads times)");
  }
  const int dp = p.data_parallel, ep = p.expert_parallel, g = p.gpus_per_stage();
  if (dp < 1 || ep < 1)
    return invalid_argument("plan: data_parallel and expert_parallel must be >= 1");
  if (!m.is_moe() && (dp > 1 || ep > 1))
    return invalid_argument("/parallel_strategy: " + m.name +
                            " is dense: data_parallel and expert_parallel apply to MoE models "
                            "(a dense model's data parallelism is `replicas`)");
  if (ep > 1 && g % ep != 0)
    return invalid_argument(
        "/parallel_strategy/expert_parallel: " + std::to_string(ep) +
        " must be 1 or divide tensor_parallel x data_parallel = " + std::to_string(g) +
        " (the stage's GPUs form expert_parallel groups, each splitting its experts over " +
        "the group's GPUs)");
  if (dp > 1 && ep == 1)
    return invalid_argument("/parallel_strategy/data_parallel: attention data parallelism (" +
                            std::to_string(dp) + ") needs expert_parallel > 1 (a divisor of " +
                            "tensor_parallel x data_parallel = " + std::to_string(g) + ")");
  if (ep > 1 && m.experts % ep != 0)
    return invalid_argument("/parallel_strategy/expert_parallel: " + std::to_string(ep) +
                            " does not divide the " + std::to_string(m.experts) + " experts of " +
                            m.name);
  const int cp = p.context_parallel;
  if (cp < 1) return invalid_argument("plan: context_parallel must be >= 1");
  if (cp > 1) {
    const std::string at = "/parallel_strategy/context_parallel: " + std::to_string(cp);
    const int copies = kv_copies(m, tp);
    if (dp > 1)
      return invalid_argument(at + " with data_parallel " + std::to_string(dp) +
                              ": context parallelism splits a TP group's KV; use one of them");
    if (copies % cp != 0)
      return invalid_argument(
          at + " must divide the " + std::to_string(copies) + " copies of each token's KV that " +
          "the TP" + std::to_string(tp) + " ranks hold (" +
          (m.kv_lora_rank > 0
               ? std::string("MLA's latent: one copy per rank")
               : std::to_string(m.kv_heads) + " KV heads over " + std::to_string(tp) + " ranks") +
          ")" + (copies == 1 ? "; with one copy there is nothing to spread" : ""));
  }
  if (m.layers % pp != 0)
    return invalid_argument(m.name + ": " + std::to_string(m.layers) +
                            " layers are not divisible by pipeline_parallel " + std::to_string(pp) +
                            "; pipeline_parallel must divide the layer count");
  return ok_status();
}

}  // namespace

Result<MemoryFit> check_plan(const model::ModelSpec& m, model::Quantization q, const Topology& t,
                             const ParallelPlan& p, const MemoryOptions& mem,
                             std::int64_t max_batch_tokens, std::int64_t min_kv_tokens) {
  PRIMA_RETURN_IF_ERROR(m.validate());
  PRIMA_RETURN_IF_ERROR(t.validate());
  PRIMA_RETURN_IF_ERROR(check_divisibility(m, p));
  if (!(mem.gpu_memory_utilization > 0 && mem.gpu_memory_utilization <= 1))
    return invalid_argument("gpu_memory_utilization must be in (0, 1]");
  if (!(mem.kv_bytes_per_element > 0)) return invalid_argument("kv_bytes_per_element must be > 0");
  if (max_batch_tokens < 0 || min_kv_tokens < 0)
    return invalid_argument("max_batch_tokens and min_kv_tokens must be >= 0");
  PRIMA_RETURN_IF_ERROR(place(p, t).status());
  if (q == model::Quantization::kFP8 && !(t.gpu.fp8_flops > 0))
    return invalid_argument("quantization fp8 needs FP8 tensor cores; " + t.gpu.name +
                            " has none (fp8_tflops 0): use w8a8 or fp16");

  const int tp = p.tensor_parallel, pp = p.pipeline_parallel, per_stage = m.layers / pp;
  MemoryFit f;
  f.hbm_bytes = t.gpu.hbm_bytes;
  f.usable_bytes =
      (mem.kv_of_free ? t.gpu.hbm_bytes : t.gpu.hbm_bytes * mem.gpu_memory_utilization) -
      mem.reserved_bytes;

  // Weights: the largest stage's share, split over its TP ranks. Embedding on the first stage,
  // final norm and LM head on the last (a tied LM head needs its own copy when pp > 1).
  double max_layer = 0;
  for (int l = 0; l < m.layers; ++l) max_layer = std::max(max_layer, m.layer_params(l));
  const double head_params =
      m.hidden + (m.tied_embeddings ? (pp > 1 ? m.embedding_params() : 0) : m.lm_head_params());
  // With expert parallelism a GPU holds 1 / expert_tensor_parallel of experts / ep routed
  // experts of each MoE layer (1 / gpus_per_stage of them in all); the rest of the layer
  // (attention, shared experts, router) is split over its TP group.
  const int ep = p.expert_parallel, dp = p.data_parallel;
  const double ep_gpus = static_cast<double>(ep) * p.expert_tensor_parallel();
  const double routed = m.is_moe() ? m.experts * m.expert_params() : 0.0;
  for (int s = 0; s < pp; ++s) {
    double layer_params = 0, expert_params = 0;
    for (int l = s * per_stage; l < (s + 1) * per_stage; ++l) {
      const bool ep_layer = ep > 1 && !m.is_dense_layer(l);
      layer_params += m.layer_params(l) - (ep_layer ? routed : 0.0);
      if (ep_layer) expert_params += routed / ep_gpus;
    }
    // cpu_offload: layers stream from host memory; two layers are resident (double buffer).
    if (mem.cpu_offload) layer_params = std::min(layer_params, 2 * max_layer);
    double bytes = model::layer_weight_bytes(layer_params, q);
    if (s == 0) bytes += 2.0 * m.embedding_params();
    if (s == pp - 1) bytes += 2.0 * head_params;
    const double per_gpu =
        bytes / tp + (expert_params > 0 ? model::layer_weight_bytes(expert_params, q) : 0.0);
    f.weight_bytes = std::max(f.weight_bytes, per_gpu);
  }
  f.weight_bytes += mem.extra_weight_bytes;

  // Activations of one forward pass of max_batch_tokens (fp16): residual, norm output,
  // attention output and a spare hidden-wide buffer (4 x hidden), the QKV output and the
  // SwiGLU gate/up outputs (per TP rank), plus fp32 logits of up to kLogitRows rows.
  const double tokens = static_cast<double>(max_batch_tokens);
  const double ffn_width = m.is_moe()
                               ? std::max<double>(m.dense_layers > 0 ? m.ffn : 0,
                                                  static_cast<double>(m.expert_ffn) *
                                                      (m.experts_per_token + m.shared_experts))
                               : m.ffn;
  const double qkv_out = (m.kv_lora_rank > 0 ? m.heads * (3.0 * m.head_dim + m.rope_dim)
                                             : (m.heads + 2.0 * m.kv_heads) * m.head_dim);
  f.activation_bytes = tokens * 2.0 * (4.0 * m.hidden + qkv_out / tp + 2.0 * ffn_width / tp) +
                       std::min(tokens, kLogitRows) * 4.0 * m.vocab / tp;

  // KV cache: this GPU's layers and KV heads, and its 1 / context_parallel of the tokens.
  const double kv_heads_per_gpu = std::max(1.0, static_cast<double>(m.kv_heads) / tp);
  const double kv_elems = (m.kv_lora_rank > 0 ? m.kv_elements_per_token_per_layer()
                                              : 2.0 * kv_heads_per_gpu * m.head_dim) /
                          p.context_parallel;
  f.kv_bytes_per_token =
      per_stage * kv_elems * mem.kv_bytes_per_element + mem.extra_kv_bytes_per_token;
  f.kv_bytes = std::max(0.0, f.usable_bytes - f.weight_bytes - f.activation_bytes) *
               (mem.kv_of_free ? mem.gpu_memory_utilization : 1.0);
  // Each attention DP group holds its own sequences' KV: the replica holds dp groups' worth.
  const std::int64_t group_tokens =
      static_cast<std::int64_t>(std::floor(f.kv_bytes / f.kv_bytes_per_token));
  f.kv_tokens = group_tokens * dp;

  const std::string what = m.name + " " + model::quantization_name(q) + " on " +
                           std::to_string(p.gpus_per_replica()) + "x " + t.gpu.name;
  std::string shape = "TP" + std::to_string(tp) + " x PP" + std::to_string(pp);
  if (dp > 1) shape += " x DP" + std::to_string(dp);
  if (ep > 1) shape += ", EP" + std::to_string(ep);
  if (p.context_parallel > 1) shape += ", CP" + std::to_string(p.context_parallel);
  const double need_kv = static_cast<double>(min_kv_tokens) * f.kv_bytes_per_token;
  if (f.weight_bytes > f.usable_bytes) {
    f.verdict = "does not fit: " + what + " needs " + gb(f.weight_bytes) + " of weights per GPU, " +
                gb(f.usable_bytes) + " usable";
  } else if (f.weight_bytes + f.activation_bytes > f.usable_bytes) {
    f.verdict = "does not fit: " + what + " needs " + gb(f.weight_bytes) + " of weights + " +
                gb(f.activation_bytes) + " of activations for " + std::to_string(max_batch_tokens) +
                " batch tokens per GPU, " + gb(f.usable_bytes) + " usable";
  } else if (group_tokens < min_kv_tokens) {
    f.verdict = "does not fit: " + what + " leaves " + gb(f.kv_bytes) +
                " per GPU for the KV cache = " + std::to_string(group_tokens) + " tokens" +
                (dp > 1 ? " per attention DP group" : "") + "; one sequence of " +
                std::to_string(min_kv_tokens) + " tokens needs " + gb(need_kv) + " per GPU";
  } else {
    f.fits = true;
    f.verdict = "fits: " + what + " (" + shape + "): " + gb(f.weight_bytes) + " of weights + " +
                gb(f.activation_bytes) + " of activations per GPU, " + gb(f.usable_bytes) +
                " usable; KV cache " + gb(f.kv_bytes) +
                " per GPU = " + std::to_string(f.kv_tokens) + " tokens per replica";
  }
  return f;
}

}  // namespace prima::plan
