// The roofline cost model (cost_model.h); every equation is written out in docs/cost-model.md.
#include "engine/perf/cost_model.h"

#include <algorithm>
#include <cmath>

namespace prima::perf {

double StepCost::total_flops() const {
  double f = 0;
  for (const auto& s : stages) f += s.flops;
  return f * tensor_parallel;
}

CostModel::CostModel(model::ModelSpec m, model::Quantization q, plan::GpuSpec gpu,
                     plan::ParallelPlan p, Efficiency eff, double kv_bytes_per_element)
    : m_(std::move(m)),
      q_(q),
      gpu_(std::move(gpu)),
      p_(p),
      eff_(eff),
      kv_bytes_(kv_bytes_per_element) {
  p_.tensor_parallel = std::max(1, p_.tensor_parallel);
  p_.pipeline_parallel = std::max(1, std::min(p_.pipeline_parallel, m_.layers));
  // add_layer's model-only sub-expressions, written as the per-batch ones expect them.
  const double tp = p_.tensor_parallel, h = m_.hidden, wb = model::weight_bytes_per_param(q_);
  const double ab = model::gemm_activation_bytes(q_), peak = gemm_peak_flops();
  const double attn_peak = q_ == model::Quantization::kBF16 ? gpu_.bf16_flops : gpu_.fp16_flops;
  const double heads = m_.heads / tp, hd = m_.head_dim;
  const bool mla = m_.kv_lora_rank > 0;
  LayerConsts& d = layer_;
  d.gemm_c = peak * eff_.gemm_compute;
  d.attn_c = attn_peak * eff_.attention_compute;
  d.gemm_m = gpu_.hbm_bw_Bps * eff_.gemm_memory;
  d.attn_m = gpu_.hbm_bw_Bps * eff_.attention_memory;
  d.elem_m = gpu_.hbm_bw_Bps * eff_.elementwise_memory;
  const double qkv_out = mla ? m_.heads * (hd + m_.rope_dim) + m_.kv_lora_rank + m_.rope_dim
                             : (m_.heads + 2.0 * m_.kv_heads) * hd;
  d.qkv_out = qkv_out / tp;
  d.qkv_params = m_.qkv_params_per_layer();
  d.qkv_w = d.qkv_params / tp * wb;
  d.qkv_act = h * ab + qkv_out / tp * 2;
  d.out_params = m_.attention_out_params_per_layer();
  d.out_w = d.out_params / tp * wb;
  d.out_act = heads * hd * ab + h * 2;
  const double fm = m_.ffn_matrices;  // SwiGLU: gate, up, down; GELU: up, down
  d.ffn_params = fm * h * m_.ffn;
  d.ffn_w = d.ffn_params / tp * wb;
  d.ffn_act = h * ab + fm * m_.ffn / tp * 2 + h * 2;
  d.heads = heads;
  d.hd = hd;
  d.attn_width = hd + m_.rope_dim + hd;
  d.pair_bytes = eff_.attention_score_bytes + (m_.alibi ? eff_.alibi_bias_bytes : 0.0);
  d.step_pair_bytes = eff_.attention_unsharded_bytes * m_.heads;
  // Context parallelism keeps 1/cp of each sequence's KV per GPU: it reads and writes that
  // share; each GPU attends for the cp group's heads over its share (the same FLOPs), after
  // gathering their queries (hd + rope wide per head) and before scattering their partial
  // outputs (hd, plus the log-sum-exp in fp32 as two elements), 16-bit.
  const double cp = p_.context_parallel;
  d.kv_elems =
      (mla ? m_.kv_elements_per_token_per_layer() : 2.0 * std::max(1.0, m_.kv_heads / tp) * hd) /
      cp;
  d.cp_bytes = (cp - 1) * heads * (d.attn_width + 2) * 2;
  d.elem_width = 12 * h + fm * double(m_.ffn) / tp;
}

void CostModel::set_draft(const model::ModelSpec& draft, model::Quantization q) {
  plan::ParallelPlan p;
  p.tensor_parallel = p_.tensor_parallel;
  auto d = std::make_shared<CostModel>(draft, q, gpu_, p, eff_, kv_bytes_);
  d->set_tp_link(tp_link_);
  draft_ = std::move(d);
}

double CostModel::gemm_peak_flops() const {
  switch (q_) {
    case model::Quantization::kW8A8:
      return gpu_.int8_ops;
    case model::Quantization::kFP8:  // check_plan refuses fp8 where fp8_flops is 0
      return gpu_.fp8_flops > 0 ? gpu_.fp8_flops : gpu_.fp16_flops;
    case model::Quantization::kBF16:
      return gpu_.bf16_flops;
    case model::Quantization::kFP16:
    case model::Quantization::kW4A16:  // dequantized to fp16 inside the GEMM
      return gpu_.fp16_flops;
  }
  return gpu_.fp16_flops;
}

double CostModel::roofline(double flops, double peak, double eff_c, double bytes, double eff_m,
                           StageCost* c) const {
  c->flops += flops;
  c->hbm_bytes += bytes;
  const double t_compute = flops > 0 ? flops / (peak * eff_c) : 0;
  const double t_memory = bytes > 0 ? bytes / (gpu_.hbm_bw_Bps * eff_m) : 0;
  return std::max(t_compute, t_memory);
}

namespace {
// CostModel::roofline with its divisors (peak x efficiency, bandwidth x efficiency) given.
inline double roof(double flops, double compute_div, double bytes, double memory_div,
                   StageCost* c) {
  c->flops += flops;
  c->hbm_bytes += bytes;
  const double t_compute = flops > 0 ? flops / compute_div : 0;
  const double t_memory = bytes > 0 ? bytes / memory_div : 0;
  return std::max(t_compute, t_memory);
}
}  // namespace

void CostModel::add_layer(int layer, const BatchShape& b, double share, double layer_comm_s,
                          StageCost* c) const {
  // The model's part of every figure is in layer_ (constructor); what depends on the batch is
  // computed here. With attention DP this GPU's group attends over `share` of the batch.
  const LayerConsts& d = layer_;
  const double tp = p_.tensor_parallel, T = static_cast<double>(b.tokens()) * share;
  const double pairs = b.attended_pairs * share, kv_read = b.kv_tokens_read * share;
  // GEMM compute share at T rows: gemm_compute x T / (T + gemm_m_half).
  const double gemm_c = d.gemm_c * m_share(T);
  double t = 0;
  // 1. QKV projection (column parallel): a GEMM of `params` weights split over TP.
  t += roof(2 * T * d.qkv_params / tp, gemm_c * wave_share(T, d.qkv_out), d.qkv_w + T * d.qkv_act,
            d.gemm_m, c);
  // 2. Attention core: QK^T and PV over attended pairs; reads the cached KV, writes the new;
  // an unfused kernel also writes and reads the score matrix.
  const double attn_flops = 2 * pairs * d.heads * d.attn_width;
  const double attn_bytes = kv_read * d.kv_elems * kv_bytes_ + T * d.kv_elems * kv_bytes_ +
                            T * d.heads * d.hd * 2 * 2 + pairs * d.heads * d.pair_bytes +
                            b.chunk_pairs * share * d.step_pair_bytes;
  // A kernel that materialises the score matrix (an engine without fused attention) runs QK^T
  // and PV as batched GEMMs, at the GEMM share; a fused kernel at the attention shares.
  const double attn_c = eff_.attention_score_bytes > 0 ? d.gemm_c : d.attn_c * seq_share(b);
  t += roof(attn_flops, attn_c, attn_bytes, d.attn_m, c);
  if (d.cp_bytes > 0) {
    c->alltoalls += 2;
    c->alltoall_bytes += T * d.cp_bytes;
  }
  // 3. Attention output projection (row parallel).
  t += roof(2 * T * d.out_params / tp, gemm_c * wave_share(T, m_.hidden), d.out_w + T * d.out_act,
            d.gemm_m, c);
  // 4. FFN: dense (SwiGLU or GELU), or the experts the batch routes to (+ shared, router).
  // 5. Norms, residual adds, RoPE (12 hidden-wide fp16 passes) and the FFN activation.
  // With expert parallelism the experts' activations are per routed row (elem_bytes).
  double elem_width = d.elem_width, elem_bytes = 0;
  if (m_.is_dense_layer(layer)) {
    t += roof(2 * T * d.ffn_params / tp, gemm_c * ffn_wave_share(T), d.ffn_w + T * d.ffn_act,
              d.gemm_m, c);
  } else if (p_.expert_parallel > 1) {
    t += add_ep_moe(static_cast<double>(b.tokens()), T, c, &elem_bytes);
    elem_width = 12 * m_.hidden;
  } else {
    const double h = m_.hidden, wb = model::weight_bytes_per_param(q_);
    const double ab = model::gemm_activation_bytes(q_);
    const double k = m_.experts_per_token + m_.shared_experts;
    const double ffn_act_width = m_.expert_ffn * k;
    const double experts_read =
        std::min<double>(m_.experts, T * m_.experts_per_token) + m_.shared_experts;
    const double router = h * m_.experts;
    const double flops = 2 * T * k * m_.expert_params() / tp + 2 * T * router;
    const double bytes = experts_read * m_.expert_params() / tp * wb + router * 2 +
                         T * k * (h * ab + 3 * m_.expert_ffn / tp * 2 + h * 2);
    // Each expert's GEMM sees about T k / E rows, not T.
    const double rows = T * m_.experts_per_token / std::max(1.0, experts_read);
    t += roof(flops, d.gemm_c * m_share(std::max(1.0, rows)), bytes, d.gemm_m, c);
    elem_width = 12 * h + 3 * ffn_act_width / tp;
  }
  t += roof(0, 1, T * 2 * elem_width + elem_bytes, d.elem_m, c);
  // Each of the layer's four GEMMs (QKV, output, gate/up, down) has its fixed kernel time.
  t += 4 * eff_.gemm_latency_s;
  // A layer takes its GPU time plus kernel gaps, and with its all-reduces never less than
  // the host needs to launch it (launch-bound steps without CUDA graphs). A step a CUDA graph
  // covers replays its kernels with no launch floor and the graph's own gaps.
  if (eff_.graph_max_tokens > 0 && b.tokens() <= eff_.graph_max_tokens)
    c->compute_s += t + eff_.graph_layer_overhead_s;
  else
    c->compute_s += std::max(t + eff_.layer_overhead_s, eff_.layer_launch_s - layer_comm_s);
}

double CostModel::add_ep_moe(double tokens, double local_tokens, StageCost* c,
                             double* elem_bytes) const {
  // Routed experts: experts / ep per expert group, each split over the group's etp GPUs; the
  // busiest group computes skew x the mean of tokens x top-k / ep rows (at most every token on
  // each of its experts it may pick), each of its GPUs 1 / etp of every row's expert FFN.
  const double h = m_.hidden, wb = model::weight_bytes_per_param(q_);
  const double ab = model::gemm_activation_bytes(q_), tp = p_.tensor_parallel;
  const double ep = p_.expert_parallel, etp = p_.expert_tensor_parallel();
  const double k = m_.experts_per_token, local = m_.experts / ep, F = m_.expert_ffn;
  const double rows = std::min(tokens * k / ep * skew_, tokens * std::min(k, local));
  const double touched = std::min(local, rows);
  const double ep_params = m_.expert_params();
  double t = 0;
  if (rows > 0)
    t += roof(2 * rows * ep_params / etp,
              layer_.gemm_c * m_share(std::max(1.0, rows / std::max(1.0, touched))),
              touched * ep_params / etp * wb + rows * (h * ab + 3.0 * F / etp * 2 + h * 2),
              layer_.gemm_m, c);
  // Shared experts and the router run where the attention does, over the group's tokens
  // (shared experts split over its TP ranks).
  const double T = local_tokens, sh = m_.shared_experts, router = h * m_.experts;
  t += roof(2 * T * sh * ep_params / tp + 2 * T * router, layer_.gemm_c * m_share(std::max(1.0, T)),
            sh * ep_params / tp * wb + router * 2 + T * sh * (h * ab + 3.0 * F / tp * 2 + h * 2),
            layer_.gemm_m, c);
  *elem_bytes += rows * 2 * 3.0 * F / etp + T * 2 * 3.0 * sh * F / tp;
  // Dispatch (GEMM input precision) and combine (16-bit) of top-k copies of each token: a GPU
  // sends its 1/tp of the group's tokens once to the expert group that holds the expert, and
  // receives 1 / etp of its group's routed rows; (ep - 1) / ep of either crosses to another
  // group. With etp > 1 the group's GPUs then all-gather the rows and reduce-scatter the
  // partial outputs: (etp - 1) / etp of the rows each way.
  const double remote = (ep - 1) / ep, row_bytes = h * (ab + 2);
  const double in_group = rows * row_bytes * (etp - 1) / etp;
  const double sent = T / tp * k * row_bytes * remote + in_group;
  const double received = rows / etp * row_bytes * remote + in_group;
  c->alltoalls += 2;
  c->alltoall_bytes += std::max(sent, received);
  return t;
}

double CostModel::gemm_time_s(double m, double n, double k) const {
  StageCost scratch;
  const double bytes = n * k * model::weight_bytes_per_param(q_) +
                       m * (k * model::gemm_activation_bytes(q_) + n * 2);
  return roof(2 * m * n * k, layer_.gemm_c * m_share(m) * wave_share(m, n), bytes, layer_.gemm_m,
              &scratch) +
         eff_.gemm_latency_s;
}

double CostModel::prefill_attention_time_s(double seqlen, double batch, double heads,
                                           double head_dim, bool causal) const {
  const double pairs = causal ? seqlen * (seqlen + 1) / 2 : seqlen * seqlen;
  const double keys = pairs / seqlen;  // per query
  const double share = eff_.attention_seq_half > 0 ? keys / (keys + eff_.attention_seq_half) : 1.0;
  const double flops = 4 * pairs * heads * head_dim * batch;
  const double bytes = 4 * seqlen * heads * head_dim * 2 * batch;  // Q, K, V in; O out (16-bit)
  const double peak16 = q_ == model::Quantization::kBF16 ? gpu_.bf16_flops : gpu_.fp16_flops;
  StageCost scratch;
  return roof(flops, peak16 * eff_.attention_compute * share, bytes,
              gpu_.hbm_bw_Bps * eff_.attention_memory, &scratch);
}

double CostModel::wave_share(double rows, double cols) const {
  if (!(eff_.gemm_tile > 0) || gpu_.sms <= 0 || rows <= 0 || cols <= 0) return 1.0;
  const double tiles = std::ceil(rows / eff_.gemm_tile) * std::ceil(cols / eff_.gemm_tile);
  const double waves = std::ceil(tiles / gpu_.sms);
  return tiles / (waves * gpu_.sms);
}

double CostModel::ffn_wave_share(double rows) const {
  if (!(eff_.gemm_tile > 0) || gpu_.sms <= 0) return 1.0;
  // SwiGLU: gate and up (fused, 2F/tp wide) carry 2/3 of the FLOPs, down (h wide) 1/3; GELU:
  // up (F/tp) and down half each. The FFN's share is the FLOP-weighted harmonic mean.
  const double tp = p_.tensor_parallel, f = m_.ffn_matrices;
  const double in_w = (f - 1) * m_.ffn / tp, in_share = (f - 1) / f;
  return 1.0 / (in_share / wave_share(rows, in_w) + (1 - in_share) / wave_share(rows, m_.hidden));
}

double CostModel::m_share(double rows) const {
  return eff_.gemm_m_half > 0 ? rows / (rows + eff_.gemm_m_half) : 1.0;
}

double CostModel::seq_share(const BatchShape& b) const {
  if (!(eff_.attention_seq_half > 0) || b.tokens() <= 0) return 1.0;
  const double keys = b.attended_pairs / static_cast<double>(b.tokens());  // per query
  return keys / (keys + eff_.attention_seq_half);
}

namespace {
// Adds k layers of cost `one` to *c (k x each figure: one rounding each, not k).
void add_layers(const StageCost& one, int k, StageCost* c) {
  if (k <= 0) return;
  const double n = k;
  c->compute_s += n * one.compute_s;
  c->flops += n * one.flops;
  c->hbm_bytes += n * one.hbm_bytes;
  c->alltoalls += k * one.alltoalls;
  c->alltoall_bytes += n * one.alltoall_bytes;
}
}  // namespace

StepCost CostModel::step(const BatchShape& b) const {
  StepCost out;
  step(b, &out);
  return out;
}

void CostModel::step(const BatchShape& b, StepCost* result) const {
  StepCost& out = *result;
  const int pp = p_.pipeline_parallel, tp = p_.tensor_parallel, dp = p_.data_parallel;
  out.stages.assign(pp, StageCost{});
  out.tensor_parallel = tp * dp;
  out.overhead_s = 0;
  if (b.tokens() <= 0) return;
  out.overhead_s = eff_.step_overhead_s + eff_.seq_overhead_s * b.num_seqs +
                   eff_.rank_overhead_s * (tp * dp - 1);
  // Attention DP: the sequences spread over dp groups; the fullest group (ceil(n / dp) of n
  // sequences) sets the step's time.
  const double share = dp > 1 && b.num_seqs > 0 ? static_cast<double>((b.num_seqs + dp - 1) / dp) /
                                                      static_cast<double>(b.num_seqs)
                                                : 1.0;
  const double T = static_cast<double>(b.tokens()) * share, h = m_.hidden;
  const int base = m_.layers / pp, extra = m_.layers % pp;
  int first = 0;
  StageCost dense_layer, moe_layer;
  bool have_dense = false, have_moe = false;
  // The two all-reduces of a layer, when the TP link is known (set_tp_link).
  const double layer_comm_s =
      tp > 1 && tp_link_.bandwidth_Bps > 0
          ? 2 * allreduce_time_s(T * h * 2, tp, tp_link_.bandwidth_Bps, tp_link_.latency_s)
          : 0.0;
  for (int s = 0; s < pp; ++s) {
    StageCost& c = out.stages[s];
    const int n = base + (s < extra ? 1 : 0);
    if (s == 0)  // embedding gather: read and write one hidden row per token
      c.compute_s += roofline(0, 1, 1, T * h * 2 * 2, eff_.elementwise_memory, &c);
    // Layers of one kind cost the same: cost one dense and one MoE layer, then add each kind
    // times its count. Dense layers are a prefix (is_dense_layer: l < dense_layers), so the
    // stage's layers are one run of dense layers then one run of MoE layers.
    const int dense_end = m_.is_moe() ? std::clamp(m_.dense_layers, first, first + n) : first + n;
    if (dense_end > first && !have_dense) {
      add_layer(first, b, share, layer_comm_s, &dense_layer);
      have_dense = true;
    }
    if (first + n > dense_end && !have_moe) {
      add_layer(dense_end, b, share, layer_comm_s, &moe_layer);
      have_moe = true;
    }
    add_layers(dense_layer, dense_end - first, &c);
    add_layers(moe_layer, first + n - dense_end, &c);
    first += n;
    if (tp > 1) {
      c.allreduces = 2 * n;
      c.allreduce_bytes = T * h * 2;
    }
    if (s < pp - 1) {
      c.send_bytes = T * h * 2;  // per DP group (each group's lead sends its own tokens)
    } else {
      // Final norm, then the LM head (16-bit weights) for the sampled rows only.
      c.compute_s += roofline(0, 1, 1, T * h * 2 * 2, eff_.elementwise_memory, &c);
      if (b.sampled > 0) {
        const double S = static_cast<double>(b.sampled) * share, v = m_.vocab;
        const double peak16 = q_ == model::Quantization::kBF16 ? gpu_.bf16_flops : gpu_.fp16_flops;
        c.compute_s += roofline(2 * S * h * v / tp, peak16,
                                eff_.gemm_compute * m_share(S) * wave_share(S, v / tp),
                                v * h / tp * 2 + S * (h * 2 + v / tp * 4), eff_.gemm_memory, &c) +
                       eff_.gemm_latency_s;
        // Sampling: softmax and draw read the fp32 logits twice on the GPU; host-side
        // samplers (the CPU backend) pay per logit.
        c.compute_s += roofline(0, 1, 1, S * v / tp * 4 * 2, eff_.elementwise_memory, &c);
        out.overhead_s += S * v * eff_.sampling_logit_s;
      }
    }
  }
  // Draft passes (speculative decoding) on stage 0 before the target verifies: the draft's
  // GPU time (its layers' launch floors included); the host's per-step overhead is the
  // engine step's, paid once (the drafts run inside it).
  if (draft_ && b.draft_steps > 0 && b.draft_seqs > 0) {
    BatchShape d;
    d.num_seqs = b.draft_seqs;
    d.decode_tokens = d.sampled = b.draft_seqs;
    d.attended_pairs = d.kv_tokens_read = b.draft_context;
    const StepCost dc = draft_->step(d);
    StageCost& c = out.stages[0];
    for (const StageCost& ds : dc.stages) {
      c.compute_s += b.draft_steps * ds.compute_s;
      c.flops += b.draft_steps * ds.flops;
      c.hbm_bytes += b.draft_steps * ds.hbm_bytes;
    }
  }
  // KV swapping between GPU and host memory: each GPU moves its share over PCIe before the step.
  const double swap_bytes = b.swap_in_bytes + b.swap_out_bytes;
  if (pcie_bw_Bps_ > 0 && swap_bytes > 0) out.stages[0].compute_s += swap_bytes / pcie_bw_Bps_;
  // KV read back from offload tiers for the step's prefix hits (each tier at its bandwidth).
  out.stages[0].compute_s += b.kv_load_s;
}

double CostModel::allreduce_time_s(double bytes, int p, double bw_Bps, double lat_s) const {
  return best_allreduce(bytes, p, bw_Bps, lat_s).seconds;
}

AllreduceChoice CostModel::best_allreduce(double bytes, int p, double bw_Bps, double lat_s) const {
  AllreduceChoice best{AllreduceAlgo::kRing, 0};
  if (p <= 1 || bytes <= 0) return best;
  const double ring_bytes = 2.0 * (p - 1) / p * bytes, hops = 2.0 * (p - 1);
  // Ring, Simple protocol: 2(p-1) hops, each moving 1/p of the buffer.
  best.seconds = eff_.allreduce_base_s + hops * (lat_s + eff_.allreduce_latency_s) +
                 ring_bytes / (bw_Bps * eff_.allreduce_bandwidth);
  auto consider = [&](AllreduceAlgo a, double s) {
    if (s < best.seconds) best = {a, s};
  };
  // Ring, low-latency protocol: same hops, cheaper per hop, a smaller share of the link.
  if (eff_.allreduce_ll_bandwidth > 0)
    consider(AllreduceAlgo::kRingLL, hops * (lat_s + eff_.allreduce_ll_latency_s) +
                                         ring_bytes / (bw_Bps * eff_.allreduce_ll_bandwidth));
  // NVLS: the switch reduces; each GPU sends its buffer once and reads the result once.
  if (eff_.nvls_bandwidth > 0)
    consider(AllreduceAlgo::kNvls,
             eff_.nvls_latency_s + lat_s + bytes / (bw_Bps * eff_.nvls_bandwidth));
  // One-shot (custom all-reduce): each GPU reads the p-1 other buffers in one step.
  if (eff_.oneshot_latency_s > 0 && bytes <= eff_.oneshot_max_bytes)
    consider(AllreduceAlgo::kOneShot, eff_.oneshot_latency_s + lat_s +
                                          (p - 1) * bytes / (bw_Bps * eff_.allreduce_bandwidth));
  return best;
}

const char* allreduce_algo_name(AllreduceAlgo a) {
  switch (a) {
    case AllreduceAlgo::kRing:
      return "ring";
    case AllreduceAlgo::kRingLL:
      return "ring_ll";
    case AllreduceAlgo::kNvls:
      return "nvls";
    case AllreduceAlgo::kOneShot:
      return "oneshot";
  }
  return "?";
}

double CostModel::alltoall_time_s(double bytes, int p, int gpus_per_node,
                                  const plan::LinkSpec& nvlink, const plan::LinkSpec& nic) const {
  if (p <= 1) return 0;
  const int gpn = std::max(1, std::min(gpus_per_node, p));
  const double intra = bytes * (gpn - 1) / (p - 1), inter = bytes - intra;
  double t = gpn > 1 && intra > 0 ? intra / (nvlink.bandwidth_Bps * eff_.allreduce_bandwidth) : 0.0;
  if (inter > 0) t = std::max(t, gpn * inter / (nic.bandwidth_Bps * eff_.allreduce_bandwidth));
  const double lat = p > gpn ? nic.latency_s : nvlink.latency_s;
  return eff_.allreduce_base_s + eff_.allreduce_latency_s + lat + t;
}

double CostModel::send_time_s(double bytes, double bw_Bps, double lat_s) const {
  return bytes / bw_Bps + lat_s + eff_.p2p_latency_s;
}

double CostModel::step_time_s(const BatchShape& b, const plan::LinkSpec& tp_link,
                              const plan::LinkSpec& pp_link) const {
  const StepCost c = step(b);
  double t = c.overhead_s;
  for (const auto& s : c.stages) {
    t += s.compute_s;
    t += s.allreduces * allreduce_time_s(s.allreduce_bytes, p_.tensor_parallel,
                                         tp_link.bandwidth_Bps, tp_link.latency_s);
    if (s.alltoalls > 0)
      t += s.alltoalls * alltoall_time_s(s.alltoall_bytes / s.alltoalls, p_.gpus_per_stage(),
                                         p_.gpus_per_stage(), tp_link, tp_link);
    if (s.send_bytes > 0) t += send_time_s(s.send_bytes, pp_link.bandwidth_Bps, pp_link.latency_s);
  }
  return t;
}

}  // namespace prima::perf
