// DeviceForward's products (device_forward.h): a layer matrix times a step's activations, each
// in the form its weights take (F16/BF16 values for dense and W4A16 weights, per-token INT8,
// per-tensor FP8, the Q8 blocks of the quantized matmul), quantized once for the products that
// read the same input (Q, K and V; gate and up), then cuBLASLt's GEMM (or the reference kernel on
// the CPU layer), prima's W4A16 GEMM or its quantized matmul; and the tensor-parallel gather of
// a stage's slices.
#include <string>

#include "backends/real/cuda/device_forward.h"
#include "kernels/cuda/kernels.h"

namespace prima::real::cuda {

namespace p_cuda = ::prima::cuda;

// The form a product's activations take for matrix m: 16-bit values (F16/BF16 weights, dense or
// W4A16), per-token INT8, per-tensor FP8, or the Q8 blocks of the quantized matmul.
int DeviceForward::activation_kind(const DeviceMatrix& m) {
  if (m.int8) return 1;
  if (m.fp8) return 2;
  if (m.type == kernels::DType::kF16) return 3;
  if (m.type == kernels::DType::kBF16) return 4;
  return 5 + int(p_cuda::activation_type(m.type));
}

Status DeviceForward::quantize_x(const DeviceMatrix& m, const float* x, std::int64_t T,
                                 const char* what) {
  const std::string call = std::string(" (") + what + ")";
  if (m.int8) {
    PRIMA_RETURN_IF_ERROR(xq_.reserve(std::size_t(T * m.cols), "activations"));
    PRIMA_RETURN_IF_ERROR(xscale_.reserve(std::size_t(T) * sizeof(float), "activation scales"));
    return cuda_status(
        p_cuda::quantize_i8_rows(kernels::DType::kF32, x, T, m.cols, xq_.as<std::int8_t>(),
                                 xscale_.as<float>(), stream_),
        "quantize_i8_rows" + call);
  }
  if (m.fp8) {
    const std::int64_t n = T * m.cols;
    PRIMA_RETURN_IF_ERROR(xq_.reserve(std::size_t(n), "activations"));
    PRIMA_RETURN_IF_ERROR(amax_.reserve(sizeof(unsigned), "the activations' amax"));
    PRIMA_RETURN_IF_ERROR(xscale_.reserve(sizeof(float), "the activations' scale"));
    PRIMA_CUDA_OK(p_cuda::fp8_amax(kernels::DType::kF32, x, n, amax_.as<unsigned>(), stream_),
                  "fp8_amax" + call);
    return cuda_status(p_cuda::to_fp8(kernels::DType::kF32, x, n, amax_.as<unsigned>(),
                                      xq_.as<std::uint8_t>(), xscale_.as<float>(), stream_),
                       "to_fp8" + call);
  }
  if (m.type == kernels::DType::kF16 || m.type == kernels::DType::kBF16) {  // dense or W4A16
    PRIMA_RETURN_IF_ERROR(xq_.reserve(std::size_t(T * m.cols) * 2, "activations"));
    return cuda_status(p_cuda::to_half(m.type, x, xq_.as<void>(), T * m.cols, stream_),
                       "to_half" + call);
  }
  const kernels::DType act = p_cuda::activation_type(m.type);
  PRIMA_RETURN_IF_ERROR(
      xq_.reserve(kernels::row_bytes(act, m.cols) * std::size_t(T), "activations"));
  return cuda_status(p_cuda::quantize_q8(act, x, xq_.as<void>(), T, m.cols, stream_),
                     "quantize_q8" + call);
}

Status DeviceForward::matmul(const DeviceMatrix& m, const float* x, std::int64_t T, float* y,
                             const char* what, bool same_x) {
  const bool dense = m.type == kernels::DType::kF16 || m.type == kernels::DType::kBF16;
  if (dense && !m.w4 && !gemm_) {
    std::string error;
    gemm_ = p_cuda::make_gemm(&error);
    if (!gemm_) return internal_error("the dense GEMM for F16/BF16/FP8/INT8 weights: " + error);
  }
  // The activations are quantized once for the products that read the same x in the same form
  // (Q, K and V; gate and up).
  const XqKey key{activation_kind(m), T, m.cols};
  if (!(same_x && xq_key_ == key)) PRIMA_RETURN_IF_ERROR(quantize_x(m, x, T, what));
  xq_key_ = key;
  // The dense GEMM of the quantized activations xq_ with m into out.
  auto gemm = [&](p_cuda::GemmType in, p_cuda::GemmType out_type, void* out,
                  const char* kind) -> Status {
    p_cuda::GemmShape g;
    g.m = T;
    g.n = m.rows;
    g.k = m.cols;
    g.in = in;
    g.out = out_type;
    if (in == p_cuda::GemmType::kFP8E4M3) {
      g.x_scale = xscale_.as<const float>();
      g.w_scale = m.scale;
    }
    if (std::string e = gemm_->run(g, xq_.as<void>(), m.data, out, stream_); !e.empty())
      return internal_error(std::string(gemm_->name()) + " " + kind + "GEMM (" + what + "): " + e);
    return ok_status();
  };
  if (m.w4)
    return cuda_status(
        p_cuda::gemm_w4a16(m.type, xq_.as<void>(), static_cast<const std::uint8_t*>(m.data), m.dm,
                           m.group, m.rows, m.cols, T, y, stream_),
        std::string("gemm_w4a16 (") + what + ")");
  if (m.int8) {
    PRIMA_RETURN_IF_ERROR(
        acc_.reserve(std::size_t(T * m.rows) * sizeof(std::int32_t), "INT32 products"));
    PRIMA_RETURN_IF_ERROR(
        gemm(p_cuda::GemmType::kI8, p_cuda::GemmType::kI32, acc_.as<void>(), "INT8 "));
    return cuda_status(p_cuda::dequant_i32(acc_.as<std::int32_t>(), xscale_.as<float>(), m.scale, T,
                                           m.rows, y, stream_),
                       std::string("dequant_i32 (") + what + ")");
  }
  if (m.fp8) return gemm(p_cuda::GemmType::kFP8E4M3, p_cuda::GemmType::kF32, y, "FP8 ");
  if (dense)
    return gemm(m.type == kernels::DType::kF16 ? p_cuda::GemmType::kF16 : p_cuda::GemmType::kBF16,
                p_cuda::GemmType::kF32, y, "");
  return cuda_status(
      p_cuda::matmul_q8(m.type, m.data, xq_.as<void>(), y, m.rows, m.cols, T, stream_),
      std::string("matmul_q8 (") + what + ")");
}

Status DeviceForward::gather(const float* local, std::int64_t T, std::int64_t cols, float* full) {
  const int tp = par_.layout.tp;
  PRIMA_RETURN_IF_ERROR(
      par_.tp->allgather(local, std::size_t(T * cols), gathered_.as<float>(), stream_));
  return cuda_status(p_cuda::interleave_columns(gathered_.as<float>(), T, cols, tp, full, stream_),
                     "interleave_columns");
}

}  // namespace prima::real::cuda
