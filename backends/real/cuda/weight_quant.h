// How the GPU forward pass stores the layers' F16/BF16 weight matrices (--quantization): as they
// are, as FP8 E4M3 with a per-tensor scale (sm_89 and later), or as INT8 W8A8 with a scale per
// output channel and activations quantized per token each step. Outside the cuda namespaces, so
// the CLI and both device flavours (cuda, cuda_emu) share the one type. Plain data.
#pragma once

namespace prima::real {

enum class WeightQuant { kNone, kFp8, kInt8 };

}  // namespace prima::real
