// The cost model: the time of one step of a batch on one replica of a plan.
//
// Roofline per operator (GEMMs, attention, norms/elementwise, LM head): time = max(FLOPs /
// (peak * eff), bytes / (HBM bw * eff)), summed over the operators of the layers a pipeline
// stage holds; plus the plan's communication (TP all-reduces, PP sends) given as bytes so a
// backend can either cost them analytically (allreduce_time_s) or turn them into flows.
// Layer overheads (eff.layer_overhead_s) are part of compute_s; the per-step overhead is not.
// Equations: docs/cost-model.md. Immutable after construction; thread-safe to share.
#pragma once

#include <memory>
#include <vector>

#include "engine/model/model_spec.h"
#include "engine/perf/calibration.h"
#include "engine/plan/parallel_plan.h"
#include "engine/plan/topology.h"
#include "engine/runtime.h"

namespace prima::perf {

struct StageCost {
  double compute_s = 0;        // operators of this stage on one of its GPUs (no communication)
  double flops = 0;            // per GPU
  double hbm_bytes = 0;        // per GPU
  int allreduces = 0;          // TP all-reduces in this stage (2 per layer when tp > 1)
  double allreduce_bytes = 0;  // size of each all-reduce's buffer (tokens x hidden x 2)
  double send_bytes = 0;       // activations sent to the next stage (0 for the last)
  // Expert parallelism: the all-to-all phases of the stage (a dispatch and a combine per MoE
  // layer) and the bytes one GPU exchanges with the other GPUs of its stage over all of them
  // (the larger of what it sends and what it receives: skew makes a busy GPU receive more).
  int alltoalls = 0;
  double alltoall_bytes = 0;
};

enum class AllreduceAlgo { kRing, kRingLL, kNvls, kOneShot };
const char* allreduce_algo_name(AllreduceAlgo a);
struct AllreduceChoice {
  AllreduceAlgo algo;
  double seconds;
};

struct StepCost {
  std::vector<StageCost> stages;
  double overhead_s = 0;       // host: per step, per sequence, host sampling (not per stage)
  int tensor_parallel = 1;     // GPUs per stage, tp x dp (StageCost figures are per GPU)
  double total_flops() const;  // all GPUs of the replica
};

class CostModel {
 public:
  // kv_bytes_per_element: KV-cache element size (2: fp16/bf16, 1: fp8/int8).
  CostModel(model::ModelSpec m, model::Quantization q, plan::GpuSpec gpu, plan::ParallelPlan p,
            Efficiency eff, double kv_bytes_per_element = 2);

  // PCIe bandwidth between a GPU and host memory, for KV swapping (BatchShape::swap_*_bytes):
  // stage 0 pays (swap_in_bytes + swap_out_bytes) / bw. 0 (the default) ignores swaps. Set
  // before the model is shared.
  void set_pcie_bandwidth_Bps(double bw) { pcie_bw_Bps_ = bw; }
  double pcie_bandwidth_Bps() const { return pcie_bw_Bps_; }

  // The link TP all-reduces run on (NVLink within a node). When set, a launch-bound layer
  // (eff.layer_launch_s) hides its all-reduces: the layer's compute_s is
  // max(GPU time, layer_launch_s - the layer's analytic all-reduce time), so compute plus
  // communication is never less than the launch time. Unset: the floor covers compute only.
  void set_tp_link(const plan::LinkSpec& link) { tp_link_ = link; }

  // Speculative decoding: the draft model (a small model, or the target's MTP heads as a
  // model of that many layers) runs BatchShape::draft_steps passes over the drafting
  // sequences before the step, each costing the GPU time of a decode step of the draft on
  // this plan's GPUs (TP as the target's, one stage; the host's per-step overhead is paid
  // once per engine step), added to stage 0. Set before sharing.
  void set_draft(const model::ModelSpec& draft, model::Quantization q);

  // Expert-load skew (workload.expert_load_skew): the busiest EP rank's routed tokens over the
  // mean (1: uniform routing). Applies with expert parallelism. Set before sharing.
  void set_expert_load_skew(double skew) { skew_ = skew; }
  double expert_load_skew() const { return skew_; }

  StepCost step(const BatchShape& b) const;
  // The same into *out, reusing its storage (no allocation once warm).
  void step(const BatchShape& b, StepCost* out) const;

  // All-reduce of `bytes` over p ranks on links of bandwidth bw (each way) and latency lat:
  // the fastest of the algorithms the calibration enables (ring Simple, ring LL, NVLS,
  // one-shot; equations in docs/cost-model.md).
  double allreduce_time_s(double bytes, int p, double bw_Bps, double lat_s) const;
  AllreduceChoice best_allreduce(double bytes, int p, double bw_Bps, double lat_s) const;
  // All-to-all over p GPUs in which each GPU exchanges `bytes` with the others, nodes of
  // gpus_per_node GPUs (p <= gpus_per_node: all on NVLink): the NVLink share and the node's
  // NIC share (each node's GPUs together) move at once, the slower ends the phase:
  //   allreduce_base_s + allreduce_latency_s + lat + max(intra / (nvlink bw x eff),
  //   gpus_per_node x inter / (nic bw x eff)), eff = allreduce_bandwidth,
  //   intra = bytes (gpus_per_node - 1) / (p - 1), inter = bytes - intra; lat is the NIC's
  //   when the phase leaves the node. One phase (count it per dispatch and per combine).
  double alltoall_time_s(double bytes, int p, int gpus_per_node, const plan::LinkSpec& nvlink,
                         const plan::LinkSpec& nic) const;
  // Point-to-point send: bytes / bw + lat + eff.p2p_latency_s.
  double send_time_s(double bytes, double bw_Bps, double lat_s) const;

  // Whole-step time when every collective runs on `link` (analytic, no contention):
  // sum over stages of compute + all-reduces + sends, plus overhead.
  double step_time_s(const BatchShape& b, const plan::LinkSpec& tp_link,
                     const plan::LinkSpec& pp_link) const;

  const model::ModelSpec& model() const { return m_; }
  const plan::ParallelPlan& plan() const { return p_; }
  const plan::GpuSpec& gpu() const { return gpu_; }
  const Efficiency& efficiency() const { return eff_; }
  // One GEMM of an m x k input by k x n weights in this quantization (the roofline every
  // projection uses): max(2mnk / (peak x gemm_compute x share(m)), bytes / (bw x gemm_memory)).
  double gemm_time_s(double m, double n, double k) const;
  // A fused prefill attention kernel alone (a FlashAttention microbenchmark): `batch`
  // sequences of `seqlen` tokens, `heads` heads of `head_dim`, causal or not; the cost model's
  // attention roofline (attention_compute at the mean keys per query, attention_memory).
  double prefill_attention_time_s(double seqlen, double batch, double heads, double head_dim,
                                  bool causal) const;
  // Peak FLOP/s of the GEMM data type of the quantization on this GPU.
  double gemm_peak_flops() const;

 private:
  model::ModelSpec m_;
  model::Quantization q_;
  plan::GpuSpec gpu_;
  plan::ParallelPlan p_;
  Efficiency eff_;
  double kv_bytes_;
  double pcie_bw_Bps_ = 0;
  double skew_ = 1;
  plan::LinkSpec tp_link_{};
  std::shared_ptr<const CostModel> draft_;

  // What a layer's cost takes from the model, GPU and plan alone, evaluated once (constructor)
  // as add_layer's expressions were written, so that every figure is the same to the last bit.
  // The FFN entries are the dense SwiGLU's (MoE layers compute theirs per batch).
  struct LayerConsts {
    double gemm_c, attn_c;          // peak x compute efficiency (GEMMs, attention)
    double gemm_m, attn_m, elem_m;  // HBM bandwidth x memory efficiency
    // Per GEMM: its parameters; params / tp x weight bytes; in width x act bytes + out x 2.
    double qkv_params, qkv_w, qkv_act;
    double qkv_out;                     // QKV output width per rank
    double out_params, out_w, out_act;  // attention output projection
    double ffn_params, ffn_w, ffn_act;  // dense SwiGLU FFN
    double heads, hd;                   // heads per rank, head dim
    double attn_width;                  // hd + rope dim + hd
    double pair_bytes;                  // score matrix (+ ALiBi bias) bytes per pair and head
    double step_pair_bytes;             // unsharded bytes per causal pair within a chunk
    double kv_elems;                    // KV elements per token per rank
    // Context parallelism: bytes one GPU exchanges per token per layer (the query all-gather
    // and the output reduce-scatter over the other cp - 1 GPUs); 0 without it.
    double cp_bytes;
    double elem_width;  // 12 h + 3 ffn / tp (norms, residuals, RoPE, SwiGLU)
  };
  LayerConsts layer_{};

  // Compute cost of one transformer layer (index `layer`) on one GPU for batch b, of whose
  // sequences the GPU's attention DP group holds `share` (1 without DP).
  void add_layer(int layer, const BatchShape& b, double share, double layer_comm_s,
                 StageCost* c) const;
  // The routed experts of an MoE layer with expert parallelism (add_layer's FFN), with their
  // all-to-all into c; returns the seconds, adds the elementwise bytes to *elem_bytes.
  double add_ep_moe(double tokens, double local_tokens, StageCost* c, double* elem_bytes) const;
  // Share of the SMs the waves of a rows x cols GEMM output keep busy (gemm_tile, sms).
  double wave_share(double rows, double cols) const;
  double ffn_wave_share(double rows) const;  // the dense FFN's GEMMs together
  // GEMM compute share at `rows` rows relative to large GEMMs (gemm_m_half).
  double m_share(double rows) const;
  // Prefill attention share at the batch's mean keys per query (attention_seq_half).
  double seq_share(const BatchShape& b) const;
  // Roofline time of one operator; also accumulates flops and bytes into c.
  double roofline(double flops, double peak, double eff_c, double bytes, double eff_m,
                  StageCost* c) const;
};

}  // namespace prima::perf
