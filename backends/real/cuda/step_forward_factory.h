// The two flavours' makers of the GPU forward pass, declared for code built outside them (the
// CLI): prima::real::cuda on kernels/cuda (a device) and prima::real::cuda_emu on the CPU
// execution layer (device_forward.h's make_step_forward and check_fp8, built twice). Each is
// defined only where its flavour is built (PRIMA_HAVE_CUDA, PRIMA_HAVE_CUDA_EMU).
#pragma once

#include <memory>

#include "backends/real/cuda/weight_quant.h"
#include "backends/real/llama_weights.h"
#include "backends/real/step_forward.h"

namespace prima::real {

namespace cuda {
Result<std::unique_ptr<StepForward>> make_step_forward(const LlamaWeights& w, int num_blocks,
                                                       int block_size, int device,
                                                       const RankJob& job, WeightQuant quant);
Status check_fp8(int device);  // ok where the device has FP8 tensor cores (sm_89 and later)
}  // namespace cuda

namespace cuda_emu {
Result<std::unique_ptr<StepForward>> make_step_forward(const LlamaWeights& w, int num_blocks,
                                                       int block_size, int device,
                                                       const RankJob& job, WeightQuant quant);
Status check_fp8(int device);  // ok where the device has FP8 tensor cores (sm_89 and later)
}  // namespace cuda_emu

}  // namespace prima::real
