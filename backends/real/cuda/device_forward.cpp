// DeviceForward (device_forward.h): the step's host-side bookkeeping, then one kernel launch
// per operation on the forward pass's stream.
#include "backends/real/cuda/device_forward.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string>

#include "backends/real/cuda/device_sampling.h"
#include "backends/real/llama_forward.h"
#include "kernels/cuda/kernels.h"

namespace prima::real::cuda {

namespace p_cuda = ::prima::cuda;

// The tag of the hidden states between stages on the host-staged path (RankRunner's own).
constexpr int kTagHidden = 102;

DeviceForward::DeviceForward(const LlamaWeights& w, int num_blocks, int block_size, Parallel par)
    : w_(w), num_blocks_(num_blocks), block_size_(block_size), par_(std::move(par)) {}

DeviceForward::~DeviceForward() {
  for (auto& [bucket, g] : graphs_) cudaGraphExecDestroy(g.exec);
  if (stream_) cudaStreamDestroy(stream_);
}

Result<std::unique_ptr<DeviceForward>> DeviceForward::create(const LlamaWeights& w, int num_blocks,
                                                             int block_size, Parallel par,
                                                             WeightQuant quant) {
  const RankLayout& l = par.layout;
  if (w.shard().tp != l.tp || w.shard().tp_rank != l.tp_rank())
    return invalid_argument("the weights are TP rank " + std::to_string(w.shard().tp_rank) +
                            " of " + std::to_string(w.shard().tp) + ", the rank's place TP rank " +
                            std::to_string(l.tp_rank()) + " of " + std::to_string(l.tp));
  if ((l.tp > 1 && !par.tp) || (l.pp > 1 && !par.pp))
    return invalid_argument("a rank of --tp " + std::to_string(l.tp) + " --pp " +
                            std::to_string(l.pp) + " needs its device transfers");
  if (num_blocks <= 0 || block_size <= 0)
    return invalid_argument("the KV cache needs at least one block of at least one token");
  std::unique_ptr<DeviceForward> f(new DeviceForward(w, num_blocks, block_size, std::move(par)));
  PRIMA_CUDA_OK(cudaStreamCreate(&f->stream_), "cudaStreamCreate");
  PRIMA_ASSIGN_OR_RETURN(f->weights_, DeviceWeights::upload(w, f->stream_, quant));
  const LlamaConfig& c = w.config();
  // One block more than the engine's: the one padded rows of a decode graph write to.
  const std::size_t kv_bytes = 2 * sizeof(std::uint16_t) * std::size_t(w.num_layers()) *
                               std::size_t(num_blocks + 1) * std::size_t(block_size) *
                               std::size_t(w.local_kv_heads()) * std::size_t(c.head_dim);
  PRIMA_RETURN_IF_ERROR(f->kv_.reserve(kv_bytes, "the KV cache"));
  f->graph_ctx_ = std::min<std::int64_t>(c.context_length, std::int64_t(num_blocks) * block_size);
  const char* mma = std::getenv("PRIMA_DEVICE_MMA_ATTENTION");
  f->mma_attention_ =
      p_cuda::attention_mma_supported(c.head_dim) && !(mma && std::string(mma) == "0");
  return f;
}

kernels::KvLayer DeviceForward::kv_layer(int l) const {
  const std::size_t per = std::size_t(num_blocks_ + 1) * std::size_t(block_size_) *
                          std::size_t(w_.local_kv_heads()) * std::size_t(w_.config().head_dim);
  auto* base = kv_.as<std::uint16_t>() + 2 * per * std::size_t(l);
  return {base, base + per, block_size_, w_.local_kv_heads(), w_.config().head_dim};
}

Status DeviceForward::upload_step(const StepInput& s, int pad_to) {
  std::vector<int> ids, slots, table_off, ctx, tables, tiles, mma_tiles;
  std::vector<std::int64_t> pos;
  for (const SeqInput& q : s.seqs) {
    const int off = int(tables.size());
    tables.insert(tables.end(), q.blocks.begin(), q.blocks.end());
    // The chunk's rows in attention tiles: a prefill chunk of a tensor-core tile or more on
    // tensor cores where the build has them, the others on the plain kernel.
    const int n = int(q.tokens.size());
    const bool mma = mma_attention_ && n >= p_cuda::kAttentionMmaTileRows;
    const int rows = mma ? p_cuda::kAttentionMmaTileRows : p_cuda::kAttentionTileRows;
    for (int b = 0; b < n; b += rows)
      (mma ? mma_tiles : tiles)
          .insert((mma ? mma_tiles : tiles).end(), {int(ids.size()) + b, std::min(n - b, rows)});
    for (std::size_t i = 0; i < q.tokens.size(); ++i) {
      const std::int64_t p = q.pos0 + std::int64_t(i);
      ids.push_back(q.tokens[i]);
      pos.push_back(p);
      slots.push_back(q.blocks[std::size_t(p / block_size_)] * block_size_ + int(p % block_size_));
      table_off.push_back(off);
      ctx.push_back(int(p + 1));
    }
  }
  if (pad_to > 0) {  // padded rows: token 0 at position 0 in the spare block, attending to it
    const int spare = int(tables.size());
    tables.push_back(num_blocks_);
    for (int r = int(ids.size()); r < pad_to; ++r) {
      ids.push_back(0);
      pos.push_back(0);
      slots.push_back(num_blocks_ * block_size_);
      table_off.push_back(spare);
      ctx.push_back(1);
      tiles.insert(tiles.end(), {r, 1});
    }
    // The block tables at the bucket's most, so the buffer never moves under a graph.
    const std::size_t most =
        std::size_t(pad_to) * std::size_t((graph_ctx_ + block_size_ - 1) / block_size_) + 1;
    PRIMA_RETURN_IF_ERROR(tables_.reserve(most * sizeof(int), "block tables"));
  }
  PRIMA_RETURN_IF_ERROR(ids_.upload(ids, stream_, "token ids"));
  PRIMA_RETURN_IF_ERROR(pos_.upload(pos, stream_, "positions"));
  PRIMA_RETURN_IF_ERROR(slots_.upload(slots, stream_, "KV slots"));
  PRIMA_RETURN_IF_ERROR(table_off_.upload(table_off, stream_, "block-table offsets"));
  PRIMA_RETURN_IF_ERROR(ctx_.upload(ctx, stream_, "context lengths"));
  n_tiles_ = int(tiles.size() / 2);
  n_mma_tiles_ = int(mma_tiles.size() / 2);
  if (n_tiles_ > 0) PRIMA_RETURN_IF_ERROR(tiles_.upload(tiles, stream_, "attention tiles"));
  if (n_mma_tiles_ > 0)
    PRIMA_RETURN_IF_ERROR(mma_tiles_.upload(mma_tiles, stream_, "tensor-core attention tiles"));
  return tables_.upload(tables, stream_, "block tables");
}

Status DeviceForward::layer(int l, std::int64_t T) {
  const LlamaConfig& c = w_.config();
  const DeviceLayer& L = weights_->layer(l);
  const int H = c.hidden, D = c.head_dim, nh = w_.local_heads(), nkv = w_.local_kv_heads();
  const std::int64_t lq = std::int64_t(nh) * D, lkv = std::int64_t(nkv) * D, nf = w_.local_ffn();
  float* x = x_.as<float>();
  const std::string at = "layer " + std::to_string(l);
  // The previous layer's FFN output added into the residual stream as the norm reads it.
  if (l > 0)
    PRIMA_CUDA_OK(
        p_cuda::add_rms_norm(x, o_.as<float>(), L.attn_norm, T, H, c.eps, h_.as<float>(), stream_),
        at + " add + attn_norm");
  else
    PRIMA_CUDA_OK(p_cuda::rms_norm(x, L.attn_norm, T, H, c.eps, h_.as<float>(), stream_),
                  at + " attn_norm");
  PRIMA_RETURN_IF_ERROR(matmul(L.wq, h_.as<float>(), T, q_.as<float>(), "wq"));
  PRIMA_RETURN_IF_ERROR(matmul(L.wk, h_.as<float>(), T, k_.as<float>(), "wk", true));
  PRIMA_RETURN_IF_ERROR(matmul(L.wv, h_.as<float>(), T, v_.as<float>(), "wv", true));
  PRIMA_CUDA_OK(p_cuda::rope_qk_tokens(q_.as<float>(), lq, nh, k_.as<float>(), lkv, nkv, T, D,
                                       c.rot_dims, pos_.as<std::int64_t>(), c.freq_base, stream_),
                at + " rope");
  const kernels::KvLayer kv = kv_layer(l);
  PRIMA_CUDA_OK(p_cuda::write_kv(kv, k_.as<float>(), v_.as<float>(), T, slots_.as<int>(), stream_),
                at + " write_kv");
  const float scale = 1.0f / std::sqrt(float(D));
  if (n_tiles_ > 0)
    PRIMA_CUDA_OK(p_cuda::paged_attention(kv, q_.as<float>(), nh, scale, T, tables_.as<int>(),
                                          table_off_.as<int>(), ctx_.as<int>(), tiles_.as<int>(),
                                          n_tiles_, att_.as<float>(), stream_),
                  at + " attention");
  if (n_mma_tiles_ > 0)
    PRIMA_CUDA_OK(
        p_cuda::paged_attention_mma(kv, q_.as<float>(), nh, scale, tables_.as<int>(),
                                    table_off_.as<int>(), ctx_.as<int>(), mma_tiles_.as<int>(),
                                    n_mma_tiles_, att_.as<float>(), stream_),
        at + " attention (tensor cores)");
  if (par_.layout.tp > 1) {  // the whole attention output, this rank's rows of Wo, all of o
    PRIMA_RETURN_IF_ERROR(gather(att_.as<float>(), T, lq, full_.as<float>()));
    PRIMA_RETURN_IF_ERROR(matmul(L.wo, full_.as<float>(), T, part_.as<float>(), "wo"));
    PRIMA_RETURN_IF_ERROR(gather(part_.as<float>(), T, L.wo.rows, o_.as<float>()));
  } else {
    PRIMA_RETURN_IF_ERROR(matmul(L.wo, att_.as<float>(), T, o_.as<float>(), "wo"));
  }
  PRIMA_CUDA_OK(
      p_cuda::add_rms_norm(x, o_.as<float>(), L.ffn_norm, T, H, c.eps, h_.as<float>(), stream_),
      at + " add + ffn_norm");
  PRIMA_RETURN_IF_ERROR(matmul(L.gate, h_.as<float>(), T, g_.as<float>(), "gate"));
  PRIMA_RETURN_IF_ERROR(matmul(L.up, h_.as<float>(), T, u_.as<float>(), "up", true));
  PRIMA_CUDA_OK(p_cuda::swiglu(g_.as<float>(), u_.as<float>(), T * nf, g_.as<float>(), stream_),
                at + " swiglu");
  if (par_.layout.tp == 1) return matmul(L.down, g_.as<float>(), T, o_.as<float>(), "down");
  PRIMA_RETURN_IF_ERROR(gather(g_.as<float>(), T, nf, full_.as<float>()));
  PRIMA_RETURN_IF_ERROR(matmul(L.down, full_.as<float>(), T, part_.as<float>(), "down"));
  return gather(part_.as<float>(), T, L.down.rows, o_.as<float>());
}

Status DeviceForward::lm_head(const std::vector<std::int64_t>& rows) {
  const LlamaConfig& c = w_.config();
  const int H = c.hidden, n = static_cast<int>(rows.size());
  PRIMA_RETURN_IF_ERROR(rows_.reserve(std::size_t(n) * H * sizeof(float), "logit rows"));
  // One launch per run of consecutive rows (a decode step's rows are one run).
  for (int r = 0; r < n;) {
    int e = r + 1;
    while (e < n && rows[e] == rows[e - 1] + 1) ++e;
    PRIMA_CUDA_OK(p_cuda::rms_norm(x_.as<float>() + rows[r] * H, weights_->output_norm(), e - r, H,
                                   c.eps, rows_.as<float>() + std::int64_t(r) * H, stream_),
                  "output_norm");
    r = e;
  }
  PRIMA_RETURN_IF_ERROR(
      logits_.reserve(std::size_t(n) * std::size_t(c.vocab) * sizeof(float), "logits"));
  return matmul(weights_->output(), rows_.as<float>(), n, logits_.as<float>(), "output");
}

Status DeviceForward::head(const StepInput& s, std::vector<float>* logits,
                           std::vector<DeviceRow>* done) {
  const std::vector<std::int64_t> rows = s.logit_rows();
  const int n = static_cast<int>(rows.size());
  if (n == 0) return ok_status();  // run() left *logits empty
  PRIMA_RETURN_IF_ERROR(lm_head(rows));
  return copy_out(s, n, logits, done);
}

Status DeviceForward::copy_out(const StepInput& s, int n, std::vector<float>* logits,
                               std::vector<DeviceRow>* done) {
  const LlamaConfig& c = w_.config();
  const std::size_t V = std::size_t(c.vocab);
  logits->resize(std::size_t(n) * V);
  // The rows the device samples or scores (sample_rows); only their answers come back.
  std::vector<char> on_device(std::size_t(n), 0);
  SamplePlan plan;
  if (done) plan = plan_sampling(s, c.vocab);
  const std::size_t m = plan.rows.size();
  std::vector<p_cuda::SampleOut> outs(m);
  if (m > 0) {
    for (const auto& r : plan.rows) on_device[std::size_t(r.row)] = 1;
    PRIMA_RETURN_IF_ERROR(sample_rows_.upload(plan.rows, stream_, "sampling rows"));
    PRIMA_RETURN_IF_ERROR(sample_biases_.upload(plan.biases, stream_, "logit biases"));
    PRIMA_RETURN_IF_ERROR(sample_edits_.upload(plan.edits, stream_, "penalties"));
    PRIMA_RETURN_IF_ERROR(sample_work_.reserve(m * V * sizeof(float), "processed logits"));
    PRIMA_RETURN_IF_ERROR(sample_scratch_.reserve(m * p_cuda::kSampleMaxCandidates * sizeof(double),
                                                  "sampling candidates"));
    PRIMA_RETURN_IF_ERROR(sample_out_.reserve(m * sizeof(p_cuda::SampleOut), "sampled tokens"));
    PRIMA_CUDA_OK(p_cuda::sample_rows(
                      logits_.as<float>(), c.vocab, sample_rows_.as<p_cuda::SampleRow>(), int(m),
                      sample_biases_.as<p_cuda::SampleBias>(),
                      sample_edits_.as<p_cuda::SampleEdit>(), sample_work_.as<float>(),
                      sample_scratch_.as<double>(), sample_out_.as<p_cuda::SampleOut>(), stream_),
                  "sample_rows");
    PRIMA_CUDA_OK(cudaMemcpyAsync(outs.data(), sample_out_.as<p_cuda::SampleOut>(),
                                  m * sizeof(p_cuda::SampleOut), cudaMemcpyDeviceToHost, stream_),
                  "copy of the sampled tokens");
  }
  // The other rows' logits, a run of consecutive rows per copy.
  auto copy_rows = [&](const std::vector<char>& skip) -> Status {
    for (int r = 0; r < n;) {
      if (skip[std::size_t(r)]) {
        ++r;
        continue;
      }
      int e = r;
      while (e < n && !skip[std::size_t(e)]) ++e;
      PRIMA_CUDA_OK(
          cudaMemcpyAsync(logits->data() + std::size_t(r) * V,
                          logits_.as<float>() + std::size_t(r) * V,
                          std::size_t(e - r) * V * sizeof(float), cudaMemcpyDeviceToHost, stream_),
          "copy of the logits");
      r = e;
    }
    return cuda_status(cudaStreamSynchronize(stream_), "the step");
  };
  PRIMA_RETURN_IF_ERROR(copy_rows(on_device));
  if (!done) return ok_status();
  done->assign(std::size_t(n), DeviceRow{});
  // A row the device gave back (a top-p nucleus beyond its candidates) is copied now: the
  // kernel left the raw logits as they were.
  std::vector<char> skip(std::size_t(n), 1);
  bool again = false;
  for (std::size_t i = 0; i < m; ++i) {
    const std::size_t r = std::size_t(plan.rows[i].row);
    (*done)[r] = device_row(plan.rows[i], outs[i]);
    if (!outs[i].done) skip[r] = 0, again = true;
  }
  return again ? copy_rows(skip) : ok_status();
}

namespace {

// The median of `repeats` runs of fn (seconds each), or the first error.
template <typename Fn>
Result<double> median_seconds(int repeats, Fn&& fn) {
  std::vector<double> t;
  for (int i = 0; i < std::max(1, repeats); ++i) {
    PRIMA_ASSIGN_OR_RETURN(const double s, fn());
    t.push_back(s);
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

Result<DeviceFacts> DeviceForward::measure_device(int repeats) {
  int dev = 0;
  PRIMA_CUDA_OK(cudaGetDevice(&dev), "cudaGetDevice");
  cudaDeviceProp p{};
  PRIMA_CUDA_OK(cudaGetDeviceProperties(&p, dev), "cudaGetDeviceProperties");
  int clock_khz = 0, sms = 0;
  PRIMA_CUDA_OK(cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, dev), "the SM clock");
  PRIMA_CUDA_OK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "the SM count");
  std::size_t free_bytes = 0, total = 0;
  PRIMA_CUDA_OK(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  const std::size_t n = std::min<std::size_t>(std::size_t(256) << 20, free_bytes / 4) & ~255u;
  DeviceBuffer a, b, one;
  PRIMA_RETURN_IF_ERROR(a.reserve(n, "the bandwidth measurement"));
  PRIMA_RETURN_IF_ERROR(b.reserve(n, "the bandwidth measurement"));
  PRIMA_RETURN_IF_ERROR(one.reserve(2 * sizeof(float), "the launch measurement"));
  PRIMA_CUDA_OK(cudaMemsetAsync(a.as<void>(), 0, n, stream_), "cudaMemsetAsync");
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  PRIMA_CUDA_OK(cudaEventCreate(&e0), "cudaEventCreate");
  PRIMA_CUDA_OK(cudaEventCreate(&e1), "cudaEventCreate");
  auto copy = [&]() -> Result<double> {
    PRIMA_CUDA_OK(cudaEventRecord(e0, stream_), "cudaEventRecord");
    PRIMA_CUDA_OK(cudaMemcpyAsync(b.as<void>(), a.as<void>(), n, cudaMemcpyDeviceToDevice, stream_),
                  "the device-to-device copy");
    PRIMA_CUDA_OK(cudaEventRecord(e1, stream_), "cudaEventRecord");
    PRIMA_CUDA_OK(cudaEventSynchronize(e1), "cudaEventSynchronize");
    float ms = 0;
    PRIMA_CUDA_OK(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime");
    return std::max(double(ms) * 1e-3, 1e-9);
  };
  auto launch = [&]() -> Result<double> {
    const auto t0 = std::chrono::steady_clock::now();
    PRIMA_CUDA_OK(p_cuda::add_inplace(one.as<float>(), one.as<float>() + 1, 1, stream_),
                  "add_inplace");
    PRIMA_CUDA_OK(cudaStreamSynchronize(stream_), "the launch measurement");
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  Result<double> copy_s = copy();  // warm-up, then the medians
  if (copy_s.ok()) copy_s = median_seconds(repeats, copy);
  Result<double> launch_s = copy_s.ok() ? median_seconds(repeats * 20, launch) : copy_s;
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  PRIMA_RETURN_IF_ERROR(copy_s.status());
  PRIMA_RETURN_IF_ERROR(launch_s.status());
  DeviceFacts f;
  f.name = p.name;
  f.memory_bytes = double(p.totalGlobalMem);
  f.bandwidth_Bps = 2.0 * double(n) / *copy_s;
  f.peak_ops = double(sms) * 512.0 * double(clock_khz) * 1e3;
  f.launch_s = *launch_s;
  f.source = "prima profile --device: bandwidth = bytes read and written per second by a " +
             std::to_string(n >> 20) +
             " MiB device-to-device copy (events); peak = SMs x 512 int8 dp4a ops per cycle x "
             "SM clock (" +
             std::to_string(sms) + " SMs, " + std::to_string(clock_khz / 1000) + " MHz)";
  return f;
}

Status check_fp8(int device) {
  cudaDeviceProp p{};
  PRIMA_CUDA_OK(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  if (p.major * 10 + p.minor < 89)
    return invalid_argument("--quantization fp8: " + std::string(p.name) + " is sm_" +
                            std::to_string(p.major * 10 + p.minor) +
                            ", and FP8 tensor cores need sm_89 or later (Ada, Hopper)");
  return ok_status();
}

Result<std::unique_ptr<StepForward>> make_step_forward(const LlamaWeights& w, int num_blocks,
                                                       int block_size, int device,
                                                       const RankJob& job, WeightQuant quant) {
  PRIMA_CUDA_OK(cudaSetDevice(device), "cudaSetDevice(" + std::to_string(device) + ")");
  cudaDeviceProp p{};
  PRIMA_CUDA_OK(cudaGetDeviceProperties(&p, device), "cudaGetDeviceProperties");
  const bool emulated = std::string(p.name).rfind("prima CUDA emulator", 0) == 0;
  if (quant == WeightQuant::kFp8) PRIMA_RETURN_IF_ERROR(check_fp8(device));
  DeviceForward::Parallel par;
  par.layout = job.layout;
  const char* env = std::getenv("PRIMA_DEVICE_COMM");
  const bool host_staged = emulated || (env && std::string(env) == "host");
  // One transfer object per communicator; each NCCL set-up is collective over its ranks, so
  // every rank makes them in this order.
  auto make = [&](Communicator* c) -> Result<std::unique_ptr<DeviceComm>> {
    if (host_staged) return make_host_staged_comm(c);
#if defined(PRIMA_DEVICE_NCCL)
    return make_nccl_comm(c);
#else
    return failed_precondition(
        "this prima was built without nccl.h, so --tp/--pp above 1 on CUDA devices has no NCCL; "
        "set PRIMA_DEVICE_COMM=host to move the data through host memory");
#endif
  };
  if (job.layout.pp > 1) {
    PRIMA_ASSIGN_OR_RETURN(par.pp, make(job.world));
  }
  if (job.layout.tp > 1) {
    PRIMA_ASSIGN_OR_RETURN(par.tp, make(job.tp_group));
  }
  const std::string comm = par.tp ? par.tp->name() : par.pp ? par.pp->name() : "";
  PRIMA_ASSIGN_OR_RETURN(std::unique_ptr<DeviceForward> f,
                         DeviceForward::create(w, num_blocks, block_size, std::move(par), quant));
  f->device_ =
      (emulated ? std::string("cuda-emu") : "cuda:" + std::to_string(device)) + " (" + p.name + ")";
  if (!comm.empty())
    f->device_ += ", rank " + std::to_string(job.layout.rank) + " of --tp " +
                  std::to_string(job.layout.tp) + " --pp " + std::to_string(job.layout.pp) +
                  " over " + comm;
  if (f->weights_->made_on_device()) f->device_ += "; synthetic weights made on the device";
  return std::unique_ptr<StepForward>(std::move(f));
}

Status DeviceForward::forward(const StepInput& s, std::vector<float>* logits) {
  return run(s, logits, nullptr);
}

Status DeviceForward::forward_sampled(const StepInput& s, std::vector<float>* logits,
                                      std::vector<DeviceRow>* done) {
  done->clear();
  return run(s, logits, done);
}

Status DeviceForward::run(const StepInput& s, std::vector<float>* logits,
                          std::vector<DeviceRow>* done) {
  PRIMA_RETURN_IF_ERROR(check_step(w_.config(), block_size_, num_blocks_, s));
  logits->clear();
  const RankLayout& lay = par_.layout;
  const std::int64_t T = s.total_tokens();
  if (T == 0) return ok_status();
  if (graphable(s)) return run_graph(s, logits, done);
  PRIMA_RETURN_IF_ERROR(upload_step(s));
  PRIMA_RETURN_IF_ERROR(reserve(T));
  PRIMA_RETURN_IF_ERROR(body(T));
  if (!lay.last_stage()) {
    PRIMA_RETURN_IF_ERROR(par_.pp->send(lay.rank_of(lay.stage() + 1, lay.tp_rank()), kTagHidden,
                                        x_.as<float>(),
                                        std::size_t(T) * std::size_t(w_.config().hidden), stream_));
    return cuda_status(cudaStreamSynchronize(stream_), "the step");
  }
  if (lay.tp_rank() != 0) return cuda_status(cudaStreamSynchronize(stream_), "the step");
  return head(s, logits, done);
}

Status DeviceForward::reserve(std::int64_t T) {
  const RankLayout& lay = par_.layout;
  const LlamaConfig& c = w_.config();
  const std::size_t f = sizeof(float);
  const std::size_t lq = std::size_t(w_.local_heads()) * c.head_dim,
                    lkv = std::size_t(w_.local_kv_heads()) * c.head_dim,
                    nf = std::size_t(w_.local_ffn()), H = std::size_t(c.hidden);
  for (auto [b, n] : {std::pair{&x_, H},
                      {&h_, H},
                      {&o_, H},
                      {&q_, lq},
                      {&att_, lq},
                      {&k_, lkv},
                      {&v_, lkv},
                      {&g_, nf},
                      {&u_, nf}})
    PRIMA_RETURN_IF_ERROR(b->reserve(n * std::size_t(T) * f, "activations"));
  if (lay.tp > 1) {  // the gathered inputs of Wo and Wd, this rank's rows of their outputs
    const std::size_t tp = std::size_t(lay.tp);
    PRIMA_RETURN_IF_ERROR(full_.reserve(std::max(lq, nf) * tp * std::size_t(T) * f, "gathers"));
    PRIMA_RETURN_IF_ERROR(
        gathered_.reserve(std::max({lq, nf, std::size_t(H)}) * tp * std::size_t(T) * f, "gathers"));
    PRIMA_RETURN_IF_ERROR(part_.reserve(H * std::size_t(T) * f, "gathers"));
  }
  return ok_status();
}

Status DeviceForward::body(std::int64_t T) {
  const RankLayout& lay = par_.layout;
  const LlamaConfig& c = w_.config();
  if (lay.first_stage()) {
    const DeviceMatrix& e = weights_->token_embd();
    PRIMA_CUDA_OK(p_cuda::embed(e.type, e.data, e.row_bytes, e.cols, ids_.as<int>(), T,
                                x_.as<float>(), stream_),
                  "embed");
  } else {
    PRIMA_RETURN_IF_ERROR(par_.pp->recv(lay.rank_of(lay.stage() - 1, lay.tp_rank()), kTagHidden,
                                        x_.as<float>(), std::size_t(T) * std::size_t(c.hidden),
                                        stream_));
  }
  for (int l = 0; l < w_.num_layers(); ++l) PRIMA_RETURN_IF_ERROR(layer(l, T));
  if (w_.num_layers() > 0)
    PRIMA_CUDA_OK(p_cuda::add_inplace(x_.as<float>(), o_.as<float>(), T * c.hidden, stream_),
                  "add");
  return ok_status();
}

}  // namespace prima::real::cuda
