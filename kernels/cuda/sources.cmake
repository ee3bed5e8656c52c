# The CUDA kernel sources of kernels/cuda, compiled by nvcc into prima_cuda and by the host
# compiler into the CPU execution layer's prima_cuda_emu (kernels/cuda/emu/CMakeLists.txt).
set(PRIMA_CUDA_KERNEL_SOURCES
  ${CMAKE_SOURCE_DIR}/kernels/cuda/attention.cu
  ${CMAKE_SOURCE_DIR}/kernels/cuda/attention_mma.cu
  ${CMAKE_SOURCE_DIR}/kernels/cuda/embed.cu
  ${CMAKE_SOURCE_DIR}/kernels/cuda/fp8_quant.cu
  ${CMAKE_SOURCE_DIR}/kernels/cuda/gemm_ref.cu
  ${CMAKE_SOURCE_DIR}/kernels/cuda/gemv_quant.cu
  ${CMAKE_SOURCE_DIR}/kernels/cuda/int8_quant.cu
  ${CMAKE_SOURCE_DIR}/kernels/cuda/matmul_quant.cu
  ${CMAKE_SOURCE_DIR}/kernels/cuda/ops.cu
  ${CMAKE_SOURCE_DIR}/kernels/cuda/quantize.cu
  ${CMAKE_SOURCE_DIR}/kernels/cuda/sample.cu
  ${CMAKE_SOURCE_DIR}/kernels/cuda/synthetic.cu
  ${CMAKE_SOURCE_DIR}/kernels/cuda/w4a16.cu)
