// The forward pass --device asks for (device_options.h device_forward), and whether that device
// has FP8 tensor cores (fp8_device_support): the GPU forward pass
// of the device flavour for cuda[:N], of the CPU execution layer for cuda-emu, none (the CPU
// path) for cpu. PRIMA_HAVE_CUDA / PRIMA_HAVE_CUDA_EMU are defined for this file where the
// flavours are built (CMakeLists.txt).
#include "backends/real/cuda/step_forward_factory.h"
#include "cli/device_options.h"

namespace prima::cli {

DeviceForwardMaker device_forward(const real::DeviceSpec& d, real::WeightQuant quant) {
  switch (d.kind) {
    case real::DeviceKind::kCpu:
      break;
    case real::DeviceKind::kCuda:
#if defined(PRIMA_HAVE_CUDA)
      return [d, quant](const real::LlamaWeights& w, int blocks, int block_size,
                        const real::RankJob& job) -> Result<std::unique_ptr<real::StepForward>> {
        PRIMA_ASSIGN_OR_RETURN(const int index, real::device_for_rank(d));
        return real::cuda::make_step_forward(w, blocks, block_size, index, job, quant);
      };
#else
      break;
#endif
    case real::DeviceKind::kCudaEmu:
#if defined(PRIMA_HAVE_CUDA_EMU)
      return [quant](const real::LlamaWeights& w, int blocks, int block_size,
                     const real::RankJob& job) {
        return real::cuda_emu::make_step_forward(w, blocks, block_size, 0, job, quant);
      };
#else
      break;
#endif
  }
  return {};
}

Status fp8_device_support(const real::DeviceSpec& d) {
  switch (d.kind) {
    case real::DeviceKind::kCpu:
      break;
    case real::DeviceKind::kCuda:
#if defined(PRIMA_HAVE_CUDA)
    {
      PRIMA_ASSIGN_OR_RETURN(const int index, real::device_for_rank(d));
      return real::cuda::check_fp8(index);
    }
#else
      break;
#endif
    case real::DeviceKind::kCudaEmu:
#if defined(PRIMA_HAVE_CUDA_EMU)
      return real::cuda_emu::check_fp8(0);
#else
      break;
#endif
  }
  return ok_status();
}

}  // namespace prima::cli
