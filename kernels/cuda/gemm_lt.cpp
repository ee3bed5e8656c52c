// LtGemm (gemm_lt.h): one cublasLtMatmul per run(), its descriptors made per call (cheap next
// to the product) and its algorithm from cuBLASLt's heuristic within the workspace.
#include "kernels/cuda/gemm_lt.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace prima::cuda {

namespace {

std::string lt_error(const char* what, cublasStatus_t st) {
  return std::string(what) + ": cuBLAS status " + std::to_string(int(st));
}

cudaDataType_t data_type(GemmType t) {
  switch (t) {
    case GemmType::kF16:
      return CUDA_R_16F;
    case GemmType::kBF16:
      return CUDA_R_16BF;
    case GemmType::kFP8E4M3:
      return CUDA_R_8F_E4M3;
    case GemmType::kI8:
      return CUDA_R_8I;
    case GemmType::kI32:
      return CUDA_R_32I;
    case GemmType::kF32:
      break;
  }
  return CUDA_R_32F;
}

// The descriptors of one product, destroyed together.
struct Descs {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~Descs() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};

}  // namespace

LtGemm::~LtGemm() {
  release();
}

LtGemm::LtGemm(LtGemm&& o) noexcept
    : handle_(std::exchange(o.handle_, nullptr)),
      workspace_(std::exchange(o.workspace_, nullptr)),
      workspace_bytes_(std::exchange(o.workspace_bytes_, 0)) {}

LtGemm& LtGemm::operator=(LtGemm&& o) noexcept {
  if (this != &o) {
    release();
    handle_ = std::exchange(o.handle_, nullptr);
    workspace_ = std::exchange(o.workspace_, nullptr);
    workspace_bytes_ = std::exchange(o.workspace_bytes_, 0);
  }
  return *this;
}

void LtGemm::release() {
  if (workspace_) cudaFree(workspace_);
  if (handle_) cublasLtDestroy(static_cast<cublasLtHandle_t>(handle_));
  workspace_ = handle_ = nullptr;
  workspace_bytes_ = 0;
}

std::string LtGemm::init(std::size_t workspace_bytes) {
  release();
  cublasLtHandle_t h = nullptr;
  if (cublasStatus_t st = cublasLtCreate(&h); st != CUBLAS_STATUS_SUCCESS)
    return lt_error("cublasLtCreate", st);
  handle_ = h;
  if (workspace_bytes > 0) {
    if (cudaError_t err = cudaMalloc(&workspace_, workspace_bytes); err != cudaSuccess) {
      workspace_ = nullptr;
      return std::string("cudaMalloc (workspace): ") + cudaGetErrorString(err);
    }
  }
  workspace_bytes_ = workspace_bytes;
  return "";
}

std::string LtGemm::run(const GemmShape& s, const void* x, const void* w, void* y,
                        cudaStream_t stream) {
  if (!handle_) return "LtGemm::run before init()";
  if (std::string e = check_shape(s, false); !e.empty()) return e;
  const cudaDataType_t in = data_type(s.in), out = data_type(s.out);
  Descs d;
  const bool i8 = s.in == GemmType::kI8;  // INT32 compute and scale type, alpha 1
  cublasStatus_t st = cublasLtMatmulDescCreate(&d.op, i8 ? CUBLAS_COMPUTE_32I : CUBLAS_COMPUTE_32F,
                                               i8 ? CUDA_R_32I : CUDA_R_32F);
  if (st != CUBLAS_STATUS_SUCCESS) return lt_error("cublasLtMatmulDescCreate", st);
  const cublasOperation_t trans = CUBLAS_OP_T;
  st = cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans);
  if (st != CUBLAS_STATUS_SUCCESS) return lt_error("cublasLtMatmulDescSetAttribute", st);
  if (s.in == GemmType::kFP8E4M3) {  // A is W, B is X
    if ((st = cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &s.w_scale,
                                             sizeof s.w_scale)) != CUBLAS_STATUS_SUCCESS ||
        (st = cublasLtMatmulDescSetAttribute(d.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &s.x_scale,
                                             sizeof s.x_scale)) != CUBLAS_STATUS_SUCCESS)
      return lt_error("cublasLtMatmulDescSetAttribute (FP8 scales)", st);
  }
  // Column-major: A = W as k x n (ld k), transposed; B = X^T as k x m (ld k); C = Y^T n x m.
  if ((st = cublasLtMatrixLayoutCreate(&d.a, in, s.k, s.n, s.k)) != CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatrixLayoutCreate(&d.b, in, s.k, s.m, s.k)) != CUBLAS_STATUS_SUCCESS ||
      (st = cublasLtMatrixLayoutCreate(&d.c, out, s.n, s.m, s.n)) != CUBLAS_STATUS_SUCCESS)
    return lt_error("cublasLtMatrixLayoutCreate", st);
  if ((st = cublasLtMatmulPreferenceCreate(&d.pref)) != CUBLAS_STATUS_SUCCESS)
    return lt_error("cublasLtMatmulPreferenceCreate", st);
  st = cublasLtMatmulPreferenceSetAttribute(d.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &workspace_bytes_, sizeof workspace_bytes_);
  if (st != CUBLAS_STATUS_SUCCESS) return lt_error("cublasLtMatmulPreferenceSetAttribute", st);
  auto* h = static_cast<cublasLtHandle_t>(handle_);
  cublasLtMatmulHeuristicResult_t heur{};
  int found = 0;
  st = cublasLtMatmulAlgoGetHeuristic(h, d.op, d.a, d.b, d.c, d.c, d.pref, 1, &heur, &found);
  if (st != CUBLAS_STATUS_SUCCESS) return lt_error("cublasLtMatmulAlgoGetHeuristic", st);
  if (found == 0) return "cuBLASLt has no algorithm for this shape and types";
  const float alpha = s.alpha, beta = 0.0f;
  const std::int32_t alpha_i = 1, beta_i = 0;
  st = cublasLtMatmul(h, d.op, i8 ? static_cast<const void*>(&alpha_i) : &alpha, w, d.a, x, d.b,
                      i8 ? static_cast<const void*>(&beta_i) : &beta, y, d.c, y, d.c, &heur.algo,
                      workspace_, workspace_bytes_, stream);
  if (st != CUBLAS_STATUS_SUCCESS) return lt_error("cublasLtMatmul", st);
  return "";
}

std::unique_ptr<Gemm> make_gemm(std::string* error) {
  auto g = std::make_unique<LtGemm>();
  if (std::string e = g->init(); !e.empty()) {
    if (error) *error = "cuBLASLt: " + e;
    return nullptr;
  }
  return g;
}

}  // namespace prima::cuda
