// DeviceWeights (device_weights.h).
#include "backends/real/cuda/device_weights.h"

#include <string>

namespace prima::real::cuda {

namespace {

bool device_type(kernels::DType t) {
  return t == kernels::DType::kQ4_0 || t == kernels::DType::kQ4_1 || t == kernels::DType::kQ8_0 ||
         t == kernels::DType::kF16 || t == kernels::DType::kBF16;
}

std::size_t matrix_bytes(const kernels::WeightView& v) {
  return kernels::row_bytes(v.type, v.cols) * std::size_t(v.rows);
}

}  // namespace

std::size_t DeviceWeights::bytes_needed(const LlamaWeights& w) {
  std::map<const void*, std::size_t> seen;
  const std::int64_t H = w.config().hidden;
  for (int i = 0; i < w.num_layers(); ++i) {
    const LayerWeights& L = w.layer(i);
    for (const kernels::WeightView* v : {&L.wq, &L.wk, &L.wv, &L.wo, &L.gate, &L.up, &L.down})
      seen[v->data] = matrix_bytes(*v);
    seen[L.attn_norm] = seen[L.ffn_norm] = std::size_t(H) * sizeof(float);
  }
  if (w.shard().embed) seen[w.token_embd().data] = matrix_bytes(w.token_embd());
  if (w.shard().head) {
    seen[w.output().data] = matrix_bytes(w.output());
    seen[w.output_norm()] = std::size_t(H) * sizeof(float);
  }
  std::size_t total = 0;
  for (const auto& [p, n] : seen) total += n;
  return total;
}

Result<DeviceMatrix> DeviceWeights::matrix(const kernels::WeightView& v, const char* name,
                                           cudaStream_t stream) {
  if (!device_type(v.type))
    return invalid_argument(std::string("tensor ") + name + " is " +
                            kernels::type_traits(v.type)->name +
                            ": the GPU forward pass takes Q4_0, Q4_1, Q8_0, F16 and BF16 weights");
  DeviceBuffer& b = copies_[v.data];
  const std::size_t n = matrix_bytes(v);
  if (b.bytes() == 0) {
    PRIMA_RETURN_IF_ERROR(b.upload(v.data, n, stream, name));
    bytes_ += n;
  }
  return DeviceMatrix{v.type, b.as<void>(), v.rows, v.cols,
                      std::int64_t(kernels::row_bytes(v.type, v.cols))};
}

Result<const float*> DeviceWeights::vector(const float* host, std::int64_t n, cudaStream_t stream) {
  DeviceBuffer& b = copies_[host];
  if (b.bytes() == 0) {
    PRIMA_RETURN_IF_ERROR(b.upload(host, std::size_t(n) * sizeof(float), stream, "a norm vector"));
    bytes_ += std::size_t(n) * sizeof(float);
  }
  return b.as<const float>();
}

Result<std::unique_ptr<DeviceWeights>> DeviceWeights::upload(const LlamaWeights& w,
                                                             cudaStream_t stream) {
  const std::size_t need = bytes_needed(w);
  std::size_t free_bytes = 0, total = 0;
  PRIMA_CUDA_OK(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  if (need > free_bytes)
    return failed_precondition("the model's weights need " + std::to_string(need >> 20) +
                               " MiB of device memory; the device has " +
                               std::to_string(free_bytes >> 20) + " MiB free of " +
                               std::to_string(total >> 20) + " MiB");
  std::unique_ptr<DeviceWeights> d(new DeviceWeights());
  const std::int64_t H = w.config().hidden;
  for (int i = 0; i < w.num_layers(); ++i) {
    const LayerWeights& L = w.layer(i);
    DeviceLayer dl;
    const std::string at = "blk." + std::to_string(w.shard().layer_begin + i) + ".";
    PRIMA_ASSIGN_OR_RETURN(dl.attn_norm, d->vector(L.attn_norm, H, stream));
    PRIMA_ASSIGN_OR_RETURN(dl.ffn_norm, d->vector(L.ffn_norm, H, stream));
    PRIMA_ASSIGN_OR_RETURN(dl.wq, d->matrix(L.wq, (at + "attn_q").c_str(), stream));
    PRIMA_ASSIGN_OR_RETURN(dl.wk, d->matrix(L.wk, (at + "attn_k").c_str(), stream));
    PRIMA_ASSIGN_OR_RETURN(dl.wv, d->matrix(L.wv, (at + "attn_v").c_str(), stream));
    PRIMA_ASSIGN_OR_RETURN(dl.wo, d->matrix(L.wo, (at + "attn_output").c_str(), stream));
    PRIMA_ASSIGN_OR_RETURN(dl.gate, d->matrix(L.gate, (at + "ffn_gate").c_str(), stream));
    PRIMA_ASSIGN_OR_RETURN(dl.up, d->matrix(L.up, (at + "ffn_up").c_str(), stream));
    PRIMA_ASSIGN_OR_RETURN(dl.down, d->matrix(L.down, (at + "ffn_down").c_str(), stream));
    d->layers_.push_back(dl);
  }
  if (w.shard().embed) {
    PRIMA_ASSIGN_OR_RETURN(d->token_embd_, d->matrix(w.token_embd(), "token_embd", stream));
  }
  if (w.shard().head) {
    PRIMA_ASSIGN_OR_RETURN(d->output_, d->matrix(w.output(), "output", stream));
    PRIMA_ASSIGN_OR_RETURN(d->output_norm_, d->vector(w.output_norm(), H, stream));
  }
  PRIMA_CUDA_OK(cudaStreamSynchronize(stream), "weight upload");
  return d;
}

}  // namespace prima::real::cuda
