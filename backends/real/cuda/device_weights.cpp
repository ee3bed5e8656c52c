// DeviceWeights (device_weights.h).
#include "backends/real/cuda/device_weights.h"

#include <algorithm>
#include <string>

#include "kernels/cuda/kernels.h"

namespace prima::real::cuda {

namespace {

bool device_type(kernels::DType t) {
  return t == kernels::DType::kQ4_0 || t == kernels::DType::kQ4_1 || t == kernels::DType::kQ8_0 ||
         t == kernels::DType::kF16 || t == kernels::DType::kBF16;
}

std::size_t matrix_bytes(const kernels::WeightView& v) {
  return kernels::row_bytes(v.type, v.cols) * std::size_t(v.rows);
}

bool dense(kernels::DType t) {
  return t == kernels::DType::kF16 || t == kernels::DType::kBF16;
}

}  // namespace

std::size_t DeviceWeights::bytes_needed(const LlamaWeights& w, WeightQuant quant) {
  std::map<const void*, std::size_t> seen;
  const std::int64_t H = w.config().hidden;
  std::size_t staging = 0;
  for (int i = 0; i < w.num_layers(); ++i) {
    const LayerWeights& L = w.layer(i);
    for (const kernels::WeightView* v : {&L.wq, &L.wk, &L.wv, &L.wo, &L.gate, &L.up, &L.down}) {
      const bool quantized = quant != WeightQuant::kNone && dense(v->type);
      const std::size_t scales =
          (quant == WeightQuant::kInt8 ? std::size_t(v->rows) : 1) * sizeof(float);
      const std::size_t group = std::size_t(std::max(1, ::prima::cuda::w4_group_size(v->cols)));
      const std::size_t codes =
          quant == WeightQuant::kW4A16
              ? std::size_t(v->rows * v->cols) / 2 + std::size_t(v->rows * v->cols) / group * 4
              : std::size_t(v->rows * v->cols) + scales;
      seen[v->data] = quantized ? codes : matrix_bytes(*v);
      if (quantized) staging = std::max(staging, matrix_bytes(*v));
    }
    seen[L.attn_norm] = seen[L.ffn_norm] = std::size_t(H) * sizeof(float);
  }
  if (w.shard().embed) seen[w.token_embd().data] = matrix_bytes(w.token_embd());
  if (w.shard().head) {
    seen[w.output().data] = matrix_bytes(w.output());
    seen[w.output_norm()] = std::size_t(H) * sizeof(float);
  }
  std::size_t total = staging;
  for (const auto& [p, n] : seen) total += n;
  return total;
}

Result<DeviceMatrix> DeviceWeights::matrix(const kernels::WeightView& v, const char* name,
                                           cudaStream_t stream, WeightQuant quant) {
  if (!device_type(v.type))
    return invalid_argument(std::string("tensor ") + name + " is " +
                            kernels::type_traits(v.type)->name +
                            ": the GPU forward pass takes Q4_0, Q4_1, Q8_0, F16 and BF16 weights");
  if (quant == WeightQuant::kW4A16 && dense(v.type)) {
    const int group = ::prima::cuda::w4_group_size(v.cols);
    if (group == 0)
      return invalid_argument(std::string("tensor ") + name + " has " + std::to_string(v.cols) +
                              " columns: W4A16 groups need a multiple of 32");
    DeviceBuffer& b = copies_[v.data];
    DeviceBuffer& s = scales_[v.data];
    const std::size_t n = std::size_t(v.rows * v.cols);
    if (b.bytes() == 0) {
      PRIMA_RETURN_IF_ERROR(fill(v, staging_, stream, name));
      PRIMA_RETURN_IF_ERROR(b.reserve(n / 2, name));
      PRIMA_RETURN_IF_ERROR(s.reserve(n / std::size_t(group) * 4, name));
      PRIMA_CUDA_OK(
          ::prima::cuda::quantize_w4_rows(v.type, staging_.as<void>(), v.rows, v.cols, group,
                                          b.as<std::uint8_t>(), s.as<std::uint16_t>(), stream),
          std::string("quantize_w4_rows (") + name + " to W4A16)");
      bytes_ += n / 2 + n / std::size_t(group) * 4;
    }
    DeviceMatrix m{v.type, b.as<void>(), v.rows, v.cols, v.cols / 2};
    m.w4 = true;
    m.group = group;
    m.dm = s.as<const std::uint16_t>();
    return m;
  }
  if (quant == WeightQuant::kInt8 && dense(v.type)) {
    if (v.cols % 4 != 0)
      return invalid_argument(std::string("tensor ") + name + " has " + std::to_string(v.cols) +
                              " columns: INT8 products need a multiple of 4");
    DeviceBuffer& b = copies_[v.data];
    DeviceBuffer& s = scales_[v.data];
    if (b.bytes() == 0) {
      PRIMA_RETURN_IF_ERROR(fill(v, staging_, stream, name));
      PRIMA_RETURN_IF_ERROR(b.reserve(std::size_t(v.rows * v.cols), name));
      PRIMA_RETURN_IF_ERROR(s.reserve(std::size_t(v.rows) * sizeof(float), name));
      PRIMA_CUDA_OK(::prima::cuda::quantize_i8_rows(v.type, staging_.as<void>(), v.rows, v.cols,
                                                    b.as<std::int8_t>(), s.as<float>(), stream),
                    std::string("quantize_i8_rows (") + name + " to INT8)");
      bytes_ += std::size_t(v.rows * v.cols) + std::size_t(v.rows) * sizeof(float);
    }
    DeviceMatrix m{v.type, b.as<void>(), v.rows, v.cols, v.cols};
    m.int8 = true;
    m.scale = s.as<const float>();
    return m;
  }
  if (quant == WeightQuant::kFp8 && dense(v.type)) {
    DeviceBuffer& b = copies_[v.data];
    DeviceBuffer& s = scales_[v.data];
    const std::int64_t n = v.rows * v.cols;
    if (b.bytes() == 0) {
      PRIMA_RETURN_IF_ERROR(fill(v, staging_, stream, name));
      PRIMA_RETURN_IF_ERROR(b.reserve(std::size_t(n), name));
      PRIMA_RETURN_IF_ERROR(s.reserve(sizeof(float), name));
      PRIMA_RETURN_IF_ERROR(amax_.reserve(sizeof(unsigned), "an FP8 amax"));
      const std::string what = std::string(" (") + name + " to FP8)";
      PRIMA_CUDA_OK(
          ::prima::cuda::fp8_amax(v.type, staging_.as<void>(), n, amax_.as<unsigned>(), stream),
          "fp8_amax" + what);
      PRIMA_CUDA_OK(::prima::cuda::to_fp8(v.type, staging_.as<void>(), n, amax_.as<unsigned>(),
                                          b.as<std::uint8_t>(), s.as<float>(), stream),
                    "to_fp8" + what);
      bytes_ += std::size_t(n) + sizeof(float);
    }
    DeviceMatrix m{v.type, b.as<void>(), v.rows, v.cols, v.cols};
    m.fp8 = true;
    m.scale = s.as<const float>();
    return m;
  }
  DeviceBuffer& b = copies_[v.data];
  const std::size_t n = matrix_bytes(v);
  if (b.bytes() == 0) {
    PRIMA_RETURN_IF_ERROR(fill(v, b, stream, name));
    bytes_ += n;
  }
  return DeviceMatrix{v.type, b.as<void>(), v.rows, v.cols,
                      std::int64_t(kernels::row_bytes(v.type, v.cols))};
}

Status DeviceWeights::fill(const kernels::WeightView& v, DeviceBuffer& dst, cudaStream_t stream,
                           const char* name) {
  const std::size_t n = matrix_bytes(v);
  if (!synth_) return dst.upload(v.data, n, stream, name);
  // The tensor of the file the view lies in, and the view's first row in it.
  const auto* p = static_cast<const std::uint8_t*>(v.data);
  for (const TensorInfo& t : file_->tensors()) {
    if (p < t.data || p >= t.data + t.nbytes) continue;
    PRIMA_ASSIGN_OR_RETURN(SyntheticTensor st, synthetic_tensor(*synth_, t.name));
    const std::int64_t row0 =
        std::int64_t(std::size_t(p - t.data) / kernels::row_bytes(t.type, t.dims[0]));
    PRIMA_RETURN_IF_ERROR(dst.reserve(n, name));
    PRIMA_CUDA_OK(
        ::prima::cuda::synthetic_rows(v.type, synth_->seed, st.index, row0, v.rows, v.cols,
                                      st.half_width, st.mean, dst.as<void>(), stream),
        std::string("synthetic_rows (") + name + ")");
    return ok_status();
  }
  return internal_error(std::string("matrix ") + name + " lies in no tensor of " + file_->path());
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
                                                             cudaStream_t stream,
                                                             WeightQuant quant) {
  const std::size_t need = bytes_needed(w, quant);
  std::size_t free_bytes = 0, total = 0;
  PRIMA_CUDA_OK(cudaMemGetInfo(&free_bytes, &total), "cudaMemGetInfo");
  if (need > free_bytes)
    return failed_precondition("the model's weights need " + std::to_string(need >> 20) +
                               " MiB of device memory; the device has " +
                               std::to_string(free_bytes >> 20) + " MiB free of " +
                               std::to_string(total >> 20) + " MiB");
  std::unique_ptr<DeviceWeights> d(new DeviceWeights());
  d->file_ = &w.file();
  PRIMA_ASSIGN_OR_RETURN(d->synth_, device_synthetic_spec(w.file()));
  const std::int64_t H = w.config().hidden;
  for (int i = 0; i < w.num_layers(); ++i) {
    const LayerWeights& L = w.layer(i);
    DeviceLayer dl;
    const std::string at = "blk." + std::to_string(w.shard().layer_begin + i) + ".";
    PRIMA_ASSIGN_OR_RETURN(dl.attn_norm, d->vector(L.attn_norm, H, stream));
    PRIMA_ASSIGN_OR_RETURN(dl.ffn_norm, d->vector(L.ffn_norm, H, stream));
    PRIMA_ASSIGN_OR_RETURN(dl.wq, d->matrix(L.wq, (at + "attn_q").c_str(), stream, quant));
    PRIMA_ASSIGN_OR_RETURN(dl.wk, d->matrix(L.wk, (at + "attn_k").c_str(), stream, quant));
    PRIMA_ASSIGN_OR_RETURN(dl.wv, d->matrix(L.wv, (at + "attn_v").c_str(), stream, quant));
    PRIMA_ASSIGN_OR_RETURN(dl.wo, d->matrix(L.wo, (at + "attn_output").c_str(), stream, quant));
    PRIMA_ASSIGN_OR_RETURN(dl.gate, d->matrix(L.gate, (at + "ffn_gate").c_str(), stream, quant));
    PRIMA_ASSIGN_OR_RETURN(dl.up, d->matrix(L.up, (at + "ffn_up").c_str(), stream, quant));
    PRIMA_ASSIGN_OR_RETURN(dl.down, d->matrix(L.down, (at + "ffn_down").c_str(), stream, quant));
    d->layers_.push_back(dl);
  }
  if (w.shard().embed) {
    PRIMA_ASSIGN_OR_RETURN(d->token_embd_, d->matrix(w.token_embd(), "token_embd", stream));
  }
  if (w.shard().head) {
    PRIMA_ASSIGN_OR_RETURN(d->output_, d->matrix(w.output(), "output", stream));
    PRIMA_ASSIGN_OR_RETURN(d->output_norm_, d->vector(w.output_norm(), H, stream));
  }
  if (quant != WeightQuant::kNone && d->scales_.empty())
    return invalid_argument(
        std::string("--quantization ") + weight_quant_name(quant) +
        " quantizes F16 and BF16 weight matrices, and this model's layers have none (its layer 0 "
        "attn_q is " +
        std::string(kernels::type_traits(w.layer(0).wq.type)->name) + ")");
  PRIMA_CUDA_OK(cudaStreamSynchronize(stream), "weight upload");
  d->staging_ = DeviceBuffer();  // the conversion's staging copy is no longer needed
  return d;
}

}  // namespace prima::real::cuda
