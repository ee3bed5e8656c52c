// How the GPU forward pass stores the layers' F16/BF16 weight matrices (--quantization): as they
// are, as FP8 E4M3 with a per-tensor scale (sm_89 and later), as INT8 W8A8 with a scale per
// output channel and activations quantized per token each step, or as W4A16 (4-bit codes with an
// f16 scale and minimum per group of 128, 64 or 32, activations in 16 bits). Outside the cuda
// namespaces, so the CLI and both device flavours (cuda, cuda_emu) share the one type. Plain data.
#pragma once

namespace prima::real {

enum class WeightQuant { kNone, kFp8, kInt8, kW4A16 };

// "fp8", "int8", "w4a16" ("none" for kNone).
inline const char* weight_quant_name(WeightQuant q) {
  return q == WeightQuant::kFp8     ? "fp8"
         : q == WeightQuant::kInt8  ? "int8"
         : q == WeightQuant::kW4A16 ? "w4a16"
                                    : "none";
}

}  // namespace prima::real
