// Profiler (profiler.h): measurement loops, the machine probes and the calibration fit.
#include "backends/real/profiler.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "backends/real/gguf.h"
#include "backends/real/kv_store.h"
#include "backends/real/llama_forward.h"
#include "backends/real/llama_weights.h"
#include "backends/real/sampler.h"
#include "backends/real/synthetic_model.h"
#include "engine/metrics/summary.h"
#include "engine/perf/cost_model.h"
#include "engine/perf/engine_profile.h"
#include "engine/perf/fit.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/thread_pool.h"

namespace prima::real {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// Median wall time of fn over `repeats` runs after one warm-up run.
template <typename Fn>
double median_time(int repeats, Fn&& fn) {
  fn();
  std::vector<double> t;
  for (int i = 0; i < std::max(1, repeats); ++i) {
    auto t0 = Clock::now();
    fn();
    t.push_back(seconds_since(t0));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

std::string cpu_model_name(double* mhz) {
  std::ifstream in("/proc/cpuinfo");
  std::string line, name = "unknown CPU";
  *mhz = 0;
  while (std::getline(in, line)) {
    auto value = [&] { return line.substr(line.find(':') + 2); };
    if (line.rfind("model name", 0) == 0 && name == "unknown CPU") name = value();
    if (line.rfind("cpu MHz", 0) == 0 && *mhz == 0) *mhz = std::stod(value());
  }
  return name;
}

double host_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  in >> key >> kb;
  return kb * 1024;
}

// All threads sum 64-bit words of a `bytes` buffer (integer adds vectorise): read bandwidth.
// The buffer is the size of the model's weights, the working set a decode step streams: on a
// CPU whose last-level cache holds part of it, that is the bandwidth the weights are read at,
// above what a buffer far larger than the cache shows.
double measure_read_bandwidth(kernels::ThreadPool& pool, int repeats, std::int64_t bytes) {
  const std::int64_t n = std::max<std::int64_t>(bytes, 1 << 20) / 8;
  std::vector<std::uint64_t> buf(n);
  pool.parallel_for(n, [&](std::int64_t b, std::int64_t e, int) {
    for (std::int64_t i = b; i < e; ++i) buf[i] = static_cast<std::uint64_t>(i);
  });
  std::vector<std::uint64_t> sums(pool.size() * 8);
  const double t = median_time(repeats, [&] {
    pool.parallel_for(
        n,
        [&](std::int64_t b, std::int64_t e, int th) {
          std::uint64_t s = 0;
          for (std::int64_t i = b; i < e; ++i) s += buf[i];
          sums[th * 8] += s;
        },
        4096);
  });
  return double(n) * 8 / t;
}

struct Fixture {
  std::unique_ptr<GgufFile> file;
  LlamaConfig cfg;
  std::unique_ptr<LlamaWeights> w;
  std::unique_ptr<KvStore> kv;
  std::unique_ptr<kernels::ThreadPool> pool;
  std::unique_ptr<LlamaForward> fwd;  // the CPU path over kv (without --device)
  std::unique_ptr<StepForward> dev;   // --device: the GPU forward pass, with its own KV cache
  int blocks_per_seq = 0;
  int max_ctx = 0;  // the longest context measured (at most the model's)
};

constexpr int kBlockSize = 16;

// A step of `seqs` sequences, each computing `n` tokens ending at context `ctx`; sequence s
// uses blocks [s * blocks_per_seq, ...). Every sequence samples.
StepInput make_step(const Fixture& fx, int seqs, int n, int ctx) {
  StepInput st;
  for (int s = 0; s < seqs; ++s) {
    SeqInput q;
    q.request = s + 1;
    q.pos0 = ctx - n;
    for (int i = 0; i < n; ++i) q.tokens.push_back((s * 131 + i * 7) % fx.cfg.vocab);
    const int nb = (ctx + kBlockSize - 1) / kBlockSize;
    for (int b = 0; b < nb; ++b) q.blocks.push_back(s * fx.blocks_per_seq + b);
    q.samples = true;
    st.seqs.push_back(std::move(q));
  }
  return st;
}

BatchShape shape_of(const StepInput& st) {
  BatchShape b;
  for (const auto& q : st.seqs) {
    SeqWork w;
    w.num_tokens = static_cast<int>(q.tokens.size());
    w.context_len = static_cast<int>(q.pos0) + w.num_tokens;
    w.is_prefill = w.num_tokens > 1;
    w.samples = q.samples;
    b.add(w);
  }
  return b;
}

double predict(const ProfileResult& r, const perf::Efficiency& e, const BatchShape& b) {
  perf::CostModel cm(r.model, r.quantization, r.hardware, plan::ParallelPlan{}, e);
  plan::LinkSpec none;
  none.bandwidth_Bps = 1e12;
  return cm.step_time_s(b, none, none);
}

// The cost model's quantization of the model's weights, by its FFN down projection's type (the
// largest matrices): BF16, F16, Q8_0 (8-bit weights and activations: W8A8), else W4A16.
model::Quantization quantization_of(const GgufFile& f) {
  const TensorInfo* t = f.tensor("blk.0.ffn_down.weight");
  if (!t) return model::Quantization::kW4A16;
  switch (t->type) {
    case kernels::DType::kBF16:
      return model::Quantization::kBF16;
    case kernels::DType::kF16:
    case kernels::DType::kF32:
      return model::Quantization::kFP16;
    case kernels::DType::kQ8_0:
      return model::Quantization::kW8A8;
    default:
      return model::Quantization::kW4A16;
  }
}

// The model's file, weights (repacked or not), a thread pool, and the forward pass over a KV
// cache for the largest batch measured (16 sequences; 64 on a device) of the longest context
// measured: the device's own (--device), or a CPU cache with every page touched.
Status open_fixture(const ProfileOptions& opts, ProfileResult* r, Fixture* fx) {
  GgufOpenOptions go;
  go.manifest = opts.manifest;
  PRIMA_ASSIGN_OR_RETURN(fx->file, GgufFile::open(opts.model_path, go));
  PRIMA_ASSIGN_OR_RETURN(fx->cfg, read_llama_config(*fx->file));
  if (!opts.device_forward) PRIMA_RETURN_IF_ERROR(check_host_weights(*fx->file));
  PRIMA_ASSIGN_OR_RETURN(fx->w, LlamaWeights::bind(*fx->file, fx->cfg, ShardSpec{}, opts.repack));
  r->model_file = opts.model_path;
  r->quantization = opts.weights_as ? *opts.weights_as : quantization_of(*fx->file);
  r->repeats = opts.repeats;
  r->threads = opts.threads > 0
                   ? opts.threads
                   : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  fx->pool = std::make_unique<kernels::ThreadPool>(r->threads);
  fx->max_ctx = std::min(fx->cfg.context_length,
                         *std::max_element(opts.contexts.begin(), opts.contexts.end()));
  const int max_seqs = opts.device_forward ? 64 : 16;  // step_shapes' largest batch
  fx->blocks_per_seq = (std::max(fx->max_ctx, 512) + kBlockSize - 1) / kBlockSize;
  if (opts.device_forward) {
    PRIMA_ASSIGN_OR_RETURN(
        fx->dev, opts.device_forward(*fx->w, max_seqs * fx->blocks_per_seq, kBlockSize, RankJob{}));
    r->device = fx->dev->device();
    return ok_status();
  }
  fx->kv = std::make_unique<KvStore>(fx->cfg.layers, max_seqs * fx->blocks_per_seq, kBlockSize,
                                     fx->cfg.kv_heads, fx->cfg.head_dim);
  // Touch the whole cache (untouched pages would read as the shared zero page).
  for (int l = 0; l < fx->kv->layers(); ++l) {
    kernels::KvLayer L = fx->kv->layer(l);
    const std::int64_t n = L.block_stride() * fx->kv->num_blocks();
    std::fill(L.k, L.k + n, std::uint16_t(0x2e66));  // 0.1 in f16
    std::fill(L.v, L.v + n, std::uint16_t(0x2e66));
  }
  fx->fwd = std::make_unique<LlamaForward>(fx->w.get(), fx->kv.get(), fx->pool.get());
  return ok_status();
}

// The device: its figures as the forward pass measures them, and the hardware spec the
// simulator uses for it (the int8 dp4a peak, as the quantized matmul runs on CUDA cores).
Status measure_device(const ProfileOptions& opts, const Fixture& fx, ProfileResult* r,
                      const std::function<void(const std::string&)>& progress) {
  PRIMA_ASSIGN_OR_RETURN(const DeviceFacts f, fx.dev->measure_device(opts.repeats));
  r->cpu = f.name;
  r->isa = "cuda";
  r->model = model_spec_of(*fx.file, fx.cfg);
  r->mem_bw_Bps = f.bandwidth_Bps;
  r->peak_flops = f.peak_ops;
  r->dispatch_s = f.launch_s;
  progress("device: " + r->device + ", bandwidth " + std::to_string(f.bandwidth_Bps / 1e9) +
           " GB/s, one kernel launch " + std::to_string(f.launch_s * 1e6) + " us");
  r->hardware.name = opts.name.empty() ? "cuda:" + f.name : opts.name;
  r->hardware.source = f.source;
  r->hardware.hbm_bytes = f.memory_bytes;
  r->hardware.hbm_bw_Bps = f.bandwidth_Bps;
  r->hardware.fp16_flops = f.peak_ops;
  r->hardware.bf16_flops = f.peak_ops;
  r->hardware.int8_ops = 2 * f.peak_ops;
  return ok_status();
}

// The machine: CPU, kernels, read bandwidth over the model's size, int8 peak, the pool's
// dispatch time, and the hardware spec the simulator uses for it.
void measure_machine(const ProfileOptions& opts, const Fixture& fx, ProfileResult* r,
                     const std::function<void(const std::string&)>& progress) {
  double mhz = 0;
  r->cpu = cpu_model_name(&mhz);
  r->isa = std::string(kernels::kernel_isa()) + (fx.w->repacked() ? "+packed" : "");
  r->model = model_spec_of(*fx.file, fx.cfg);
  const auto weight_bytes = static_cast<std::int64_t>(fx.file->file_size());
  r->mem_bw_Bps = measure_read_bandwidth(*fx.pool, opts.repeats, weight_bytes);
  // The matmuls multiply 8-bit quantized activations by 4/8-bit weights in int8 dot products:
  // one 512-bit VNNI instruction per cycle is 64 multiply-adds (128 ops), AVX-VNNI and AVX2
  // half that.
  const bool avx512 = std::string(kernels::kernel_isa()).find("avx512") != std::string::npos;
  r->peak_flops = (mhz > 0 ? mhz * 1e6 : 2e9) * (avx512 ? 128.0 : 64.0) * r->threads;
  r->dispatch_s = median_time(opts.repeats * 20, [&] {
    fx.pool->parallel_for(r->threads, [](std::int64_t, std::int64_t, int) {});
  });
  progress("machine: " + r->cpu + ", " + std::to_string(r->threads) + " threads, kernels " +
           r->isa + ", read bandwidth " + std::to_string(r->mem_bw_Bps / 1e9) + " GB/s over " +
           std::to_string(weight_bytes >> 20) + " MiB (the model file)");
  r->hardware.name = opts.name.empty() ? "cpu:" + r->cpu : opts.name;
  r->hardware.source =
      "prima profile: read bandwidth measured over the model's size; peak = cpu MHz x int8 "
      "dot-product ops per "
      "cycle (128 AVX-512 VNNI, else 64) x threads";
  r->hardware.hbm_bytes = host_memory_bytes();
  r->hardware.hbm_bw_Bps = r->mem_bw_Bps;
  r->hardware.fp16_flops = r->peak_flops;
  r->hardware.bf16_flops = r->peak_flops;
  r->hardware.int8_ops = 2 * r->peak_flops;
}

// The linear layers of layer 0 and the LM head, then norm, RoPE and SwiGLU, over batch sizes.
void time_layer_operators(const ProfileOptions& opts, const Fixture& fx, std::mt19937* rng,
                          ProfileResult* r,
                          const std::function<void(const std::string&)>& progress) {
  std::uniform_real_distribution<float> U(-1, 1);
  const auto& L0 = fx.w->layer(0);
  const std::vector<std::pair<std::string, const kernels::WeightView*>> linears = {
      {"attn_q", &L0.wq},      {"attn_k", &L0.wk},         {"attn_v", &L0.wv},
      {"attn_output", &L0.wo}, {"ffn_gate", &L0.gate},     {"ffn_up", &L0.up},
      {"ffn_down", &L0.down},  {"output", &fx.w->output()}};
  const int max_batch = *std::max_element(opts.batches.begin(), opts.batches.end());
  std::vector<float> x(std::size_t(max_batch) * std::max(fx.cfg.hidden, fx.cfg.ffn));
  for (float& v : x) v = U(*rng);
  std::vector<float> y(std::size_t(max_batch) * fx.cfg.vocab);
  for (const auto& [name, wv] : linears) {
    for (int n : opts.batches) {
      if (name == "output" && n > 16) continue;  // only sampled rows reach the LM head
      const double t =
          median_time(opts.repeats, [&] { kernels::matmul(*wv, x.data(), n, y.data(), *fx.pool); });
      const double bytes = double(kernels::row_bytes(wv->type, wv->cols)) * wv->rows;
      r->ops.push_back({"matmul:" + name, n, 0, t, 2.0 * wv->rows * wv->cols * n, bytes});
    }
    progress("matmul " + name + " done");
  }
  std::vector<float> nw(fx.cfg.hidden, 1.0f), a(std::size_t(max_batch) * fx.cfg.ffn);
  for (int n : opts.batches) {
    double t = median_time(opts.repeats, [&] {
      for (int i = 0; i < n; ++i)
        kernels::rms_norm(x.data() + std::size_t(i) * fx.cfg.hidden, nw.data(), fx.cfg.hidden,
                          fx.cfg.eps, a.data() + std::size_t(i) * fx.cfg.hidden);
    });
    r->ops.push_back({"rms_norm", n, 0, t, 0, 8.0 * n * fx.cfg.hidden});
    t = median_time(opts.repeats, [&] {
      for (int i = 0; i < n; ++i)
        kernels::rope(a.data() + std::size_t(i) * fx.cfg.hidden, fx.cfg.heads, fx.cfg.head_dim,
                      fx.cfg.rot_dims, 100 + i, fx.cfg.freq_base);
    });
    r->ops.push_back({"rope", n, 0, t, 0, 8.0 * n * fx.cfg.hidden});
    t = median_time(opts.repeats, [&] {
      kernels::silu_mul(x.data(), a.data(), std::int64_t(n) * fx.cfg.ffn, a.data(), fx.cfg.ffn);
    });
    r->ops.push_back({"silu_mul", n, 0, t, 0, 12.0 * n * fx.cfg.ffn});
  }
}

// Attention of layer 0 over contexts: one decode token, and a prefill chunk ending there.
void time_attention(const ProfileOptions& opts, const Fixture& fx, std::mt19937* rng,
                    ProfileResult* r) {
  std::uniform_real_distribution<float> U(-1, 1);
  const int qdim = fx.cfg.heads * fx.cfg.head_dim;
  std::vector<float> q(std::size_t(128) * qdim), out(q.size());
  for (float& v : q) v = U(*rng);
  const float scale = 1.0f / std::sqrt(float(fx.cfg.head_dim));
  std::vector<int> table(fx.blocks_per_seq);
  for (int b = 0; b < fx.blocks_per_seq; ++b) table[b] = b;
  const double kv_token_bytes = 2.0 * 2 * fx.cfg.kv_heads * fx.cfg.head_dim;
  for (int c : opts.contexts) {
    if (c > fx.max_ctx) continue;
    const kernels::KvLayer kvl = fx.kv->layer(0);
    double t = median_time(opts.repeats, [&] {
      kernels::attention(kvl, table.data(), c - 1, 1, q.data(), fx.cfg.heads, scale, out.data(),
                         *fx.pool);
    });
    r->ops.push_back({"attention:decode", 1, c, t, 4.0 * c * qdim, kv_token_bytes * c});
    const int n = std::min(c, 128);
    t = median_time(opts.repeats, [&] {
      kernels::attention(kvl, table.data(), c - n, n, q.data(), fx.cfg.heads, scale, out.data(),
                         *fx.pool);
    });
    r->ops.push_back({"attention:prefill", n, c, t,
                      4.0 * qdim * (double(n) * c - n * (n - 1) / 2.0), kv_token_bytes * c});
  }
}

struct StepShape {
  const char* kind;
  int seqs, n, ctx;
};

// The whole forward steps timed: decode at batch 1, 4, 8, 16 and short and long contexts,
// prefill of 32-512 tokens (the first three are the profile's reference points); on a device
// also decode at batch 32 and 64 at the long context and prefill of 1,024 and 2,048 tokens
// (where the contexts measured reach them), the shapes a GPU serves.
std::vector<StepShape> step_shapes(int max_ctx, bool device) {
  std::vector<StepShape> shapes = {
      {"decode", 1, 1, 128}, {"prefill", 1, 256, 256}, {"decode", 1, 1, max_ctx}};
  const int long_ctx = std::min(1024, max_ctx);
  for (int b : {4, 8, 16}) {
    shapes.push_back({"decode", b, 1, 128});
    if (long_ctx != 128) shapes.push_back({"decode", b, 1, long_ctx});
  }
  for (int n : {32, 128, 512})
    if (n <= max_ctx) shapes.push_back({"prefill", 1, n, n});
  if (device) {
    for (int b : {32, 64}) shapes.push_back({"decode", b, 1, long_ctx});
    for (int n : {1024, 2048})
      if (n <= max_ctx) shapes.push_back({"prefill", 1, n, n});
  }
  return shapes;
}

Status time_steps(const ProfileOptions& opts, const Fixture& fx,
                  const std::vector<StepShape>& shapes, ProfileResult* r,
                  const std::function<void(const std::string&)>& progress) {
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    const StepShape& s = shapes[i];
    StepInput st = make_step(fx, s.seqs, s.n, s.ctx);
    Status err;
    std::vector<float> logits;
    const double t = median_time(std::max(1, opts.repeats / (s.n >= 256 ? 2 : 1)), [&] {
      Status st2 = fx.dev ? fx.dev->forward(st, &logits) : fx.fwd->forward(st, &logits);
      if (!st2.ok()) err = st2;
    });
    if (!err.ok()) return err;
    StepTiming sm{s.kind, s.seqs, s.seqs * s.n, s.ctx, t, 0, i < 3};
    r->steps.push_back(sm);
    progress(std::string("step ") + s.kind + " seqs=" + std::to_string(s.seqs) +
             " tokens=" + std::to_string(sm.tokens) + " ctx=" + std::to_string(s.ctx) + ": " +
             std::to_string(t * 1e3) + " ms");
  }
  return ok_status();
}

// Host sampling at the server's default (temperature 1, no top-k/top-p cut): its time per
// logit is the cost model's sampling_logit_s.
void time_sampling(const ProfileOptions& opts, const Fixture& fx, std::mt19937* rng,
                   ProfileResult* r, const std::function<void(const std::string&)>& progress) {
  std::uniform_real_distribution<float> U(-1, 1);
  std::vector<float> logits(fx.cfg.vocab);
  for (float& v : logits) v = 4 * U(*rng);
  SamplingParams sp;
  sp.temperature = 1.0;
  std::vector<std::pair<float, int>> scratch;
  std::int64_t pos = 0;
  const double t = median_time(opts.repeats * 20, [&] {
    (void)sample_token(logits.data(), fx.cfg.vocab, sp, 1, ++pos, &scratch);
  });
  r->sampling_s = t;
  progress("sampling (temperature 1): " + std::to_string(t * 1e6) + " us per token");
}

// Fits every measured step at once (Nelder-Mead on the mean squared log error): GEMM shares
// and the rows where the compute share halves, KV-read share, per-step and per-sequence
// costs. Kernel gaps come from the measured pool dispatch; sampling from its measurement.
Status fit_steps(const Fixture& fx, const std::vector<StepShape>& shapes, ProfileResult* r) {
  perf::Efficiency e;
  e.step_overhead_s = 0;
  // Matmul and attention pool jobs per layer: QKV, attention, output, gate+up, down
  // (llama_forward.cpp; batches of several tokens add norm and conversion jobs).
  // On a device the launches are queued ahead of the kernels, so their gaps are not the
  // measured launch-to-completion time: the fitted per-step cost takes them.
  e.layer_overhead_s = fx.dev ? 0.0 : 5 * r->dispatch_s;
  e.allreduce_latency_s = 0;
  e.p2p_latency_s = 0;
  e.sampling_logit_s = 0;  // the measured steps compute logits but do not sample
  std::vector<BatchShape> bs;
  for (const StepShape& s : shapes) bs.push_back(shape_of(make_step(fx, s.seqs, s.n, s.ctx)));
  struct Param {
    double perf::Efficiency::*field;
    perf::FitBound bounds;
    double start;
  };
  const std::vector<Param> params = {
      {&perf::Efficiency::gemm_compute, {0.01, 1}, 0.5},
      {&perf::Efficiency::gemm_m_half, {0, 256}, 4},
      {&perf::Efficiency::gemm_memory, {0.05, 1}, 0.5},
      {&perf::Efficiency::attention_memory, {0.01, 1}, 0.3},
      {&perf::Efficiency::attention_compute, {0.01, 1}, 0.3},
      {&perf::Efficiency::step_overhead_s, {0, 0.01}, 1e-4},
      {&perf::Efficiency::seq_overhead_s, {0, 0.005}, 1e-5},
  };
  auto with = [&](const std::vector<double>& x) {
    perf::Efficiency f = e;
    for (std::size_t i = 0; i < params.size(); ++i) f.*(params[i].field) = x[i];
    return f;
  };
  auto objective = [&](const std::vector<double>& x) {
    const perf::Efficiency f = with(x);
    double sum = 0;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const double l = std::log(predict(*r, f, bs[i]) / r->steps[i].seconds);
      sum += l * l;
    }
    return sum / shapes.size();
  };
  std::vector<double> x0;
  std::vector<perf::FitBound> bounds;
  for (const auto& p : params) {
    x0.push_back(p.start);
    bounds.push_back(p.bounds);
  }
  perf::NelderMeadOptions nm;
  nm.max_iterations = 3000;
  nm.restarts = 6;  // a collapsed simplex is rebuilt around the best point
  nm.f_tolerance = 1e-14;
  auto best = perf::nelder_mead(objective, x0, bounds, nm);
  if (!best.ok()) return best.status();
  e = with(best->x);
  e.elementwise_memory = e.gemm_memory;
  e.sampling_logit_s = r->sampling_s / fx.cfg.vocab;
  r->efficiency = e;
  for (auto& s : r->steps) s.fitted = true;
  // The steps were timed without sampling; predict them the same way.
  perf::Efficiency no_sampling = e;
  no_sampling.sampling_logit_s = 0;
  for (std::size_t i = 0; i < shapes.size(); ++i)
    r->steps[i].predicted_s = predict(*r, no_sampling, bs[i]);
  return ok_status();
}

}  // namespace

Result<ProfileResult> run_profile(const ProfileOptions& opts,
                                  const std::function<void(const std::string&)>& progress) {
  ProfileResult r;
  Fixture fx;
  PRIMA_RETURN_IF_ERROR(open_fixture(opts, &r, &fx));
  std::mt19937 rng(1);  // the operands' values (they do not change the timings' meaning)
  if (fx.dev) {         // the device's whole steps; its operators are not timed one by one
    PRIMA_RETURN_IF_ERROR(measure_device(opts, fx, &r, progress));
  } else {
    measure_machine(opts, fx, &r, progress);
    time_layer_operators(opts, fx, &rng, &r, progress);
    time_attention(opts, fx, &rng, &r);
    progress("operators done (" + std::to_string(r.ops.size()) + " timings)");
  }
  const std::vector<StepShape> shapes = step_shapes(fx.max_ctx, fx.dev != nullptr);
  PRIMA_RETURN_IF_ERROR(time_steps(opts, fx, shapes, &r, progress));
  time_sampling(opts, fx, &rng, &r, progress);
  PRIMA_RETURN_IF_ERROR(fit_steps(fx, shapes, &r));
  return r;
}

perf::Fidelity step_fidelity(const ProfileResult& r) {
  perf::Fidelity f;
  std::vector<double> errors;
  int fitted = 0;
  for (const auto& s : r.steps) {
    if (s.seconds <= 0) continue;
    errors.push_back(std::abs(s.predicted_s - s.seconds) / s.seconds);
    fitted += s.fitted;
  }
  f.calibration_data = fmt::format("prima profile forward steps on {}, {} of the {} fitted",
                                   r.model.name, fitted, errors.size());
  perf::summarize_errors(errors, &f);
  return f;
}

perf::Profile to_profile(const ProfileResult& r) {
  perf::Profile p;
  p.name = r.hardware.name;
  const std::string model_file = std::filesystem::path(r.model_file).filename().string();
  if (r.device.empty()) {
    p.description = fmt::format("{}: the real CPU backend ({} threads, {} kernels) as a device",
                                r.cpu, r.threads, r.isa);
    p.source = fmt::format(
        "prima profile: {} ({}) on {}, {} threads, {} kernels, median of {} runs; efficiency "
        "fitted to the measured steps; read bandwidth measured over the model's size; peak = cpu "
        "MHz x int8 dot-product ops per cycle x threads",
        model_file, r.model.name, r.cpu, r.threads, r.isa, r.repeats);
  } else {
    p.description = fmt::format("{}: prima's GPU forward pass on it", r.device);
    p.source = fmt::format(
        "prima profile --device: {} ({}) on {}, median of {} runs; efficiency fitted to the "
        "measured steps; {}",
        model_file, r.model.name, r.device, r.repeats, r.hardware.source);
  }
  p.efficiency = r.efficiency;
  p.fidelity = step_fidelity(r);
  p.fidelity.profile = p.name;
  p.fidelity.source = p.source;
  p.gpu = config::Json{{"name", r.hardware.name},
                       {"source", r.hardware.source},
                       {"memory", fmt::format("{}B", static_cast<long long>(r.hardware.hbm_bytes))},
                       {"hbm_bandwidth", fmt::format("{:.3f}GB/s", r.hardware.hbm_bw_Bps / 1e9)},
                       {"fp16_tflops", r.hardware.fp16_flops / 1e12},
                       {"bf16_tflops", r.hardware.bf16_flops / 1e12},
                       {"int8_tops", r.hardware.int8_ops / 1e12}};
  return p;
}

namespace {
// Parameters of the transformer layers (the matrices every token multiplies by).
double layer_params(const model::ModelSpec& m) {
  double n = 0;
  for (int l = 0; l < m.layers; ++l) n += m.layer_params(l);
  return n;
}
}  // namespace

nlohmann::json profile_to_json(const ProfileResult& r) {
  using nlohmann::json;
  json ops = json::array();
  for (const auto& o : r.ops)
    ops.push_back({{"op", o.op},
                   {"batch", o.batch},
                   {"context", o.context},
                   {"seconds", o.seconds},
                   {"gflops", o.flops > 0 ? o.flops / o.seconds / 1e9 : 0.0},
                   {"gbps", o.bytes / o.seconds / 1e9}});
  json steps = json::array();
  for (const auto& s : r.steps)
    steps.push_back({{"kind", s.kind},
                     {"seqs", s.seqs},
                     {"tokens", s.tokens},
                     {"context", s.context},
                     {"seconds", s.seconds},
                     {"predicted_s", s.predicted_s},
                     {"ratio", s.predicted_s / s.seconds},
                     {"fitted", s.fitted}});
  json j = perf::profile_to_json(to_profile(r));
  j["measurements"] = {{"cpu", r.cpu},
                       {"device", r.device},
                       {"kernels", r.isa},
                       {"threads", r.threads},
                       {"repeats", r.repeats},
                       {"read_bandwidth_GBps", r.mem_bw_Bps / 1e9},
                       {"peak_gflops", r.peak_flops / 1e9},
                       {"dispatch_us", r.dispatch_s * 1e6},
                       {"model", r.model.name},
                       {"model_shape",
                        {{"layers", r.model.layers},
                         {"hidden", r.model.hidden},
                         {"heads", r.model.heads},
                         {"kv_heads", r.model.kv_heads},
                         {"head_dim", r.model.head_dim},
                         {"ffn", r.model.ffn},
                         {"vocab", r.model.vocab},
                         {"layer_params", layer_params(r.model)}}},
                       {"model_file", r.model_file},
                       {"quantization", model::quantization_name(r.quantization)},
                       {"operators", ops},
                       {"steps", steps}};
  return j;
}

nlohmann::json engine_to_json(const ProfileResult& r) {
  perf::EngineProfile e = *perf::builtin_engine("prima-cpu");
  e.description = r.device.empty() ? "prima's CPU backend on " + r.cpu + " (" +
                                         std::to_string(r.threads) + " threads, kernels " + r.isa +
                                         "): the engine terms prima profile fitted there"
                                   : "prima's GPU forward pass on " + r.device +
                                         ": the engine terms prima profile fitted there";
  e.source = "prima profile: " + r.model_file;
  e.per_gpu[r.hardware.name] = r.efficiency;
  e.fidelity.clear();
  return perf::engine_profile_to_json(e);
}

std::string engine_path_for(const std::string& profile_path) {
  const std::string ext = ".json";
  if (profile_path.size() > ext.size() &&
      profile_path.compare(profile_path.size() - ext.size(), ext.size(), ext) == 0)
    return profile_path.substr(0, profile_path.size() - ext.size()) + ".engine.json";
  return profile_path + ".engine.json";
}

}  // namespace prima::real
