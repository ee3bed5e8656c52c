// The ggml tensor-type table (names of all assigned type numbers, block sizes of the types
// prima reads) and the names and sizes of GGUF metadata value types.
// Constant tables; thread-safe.
#include <array>

#include "backends/real/gguf_parse.h"

namespace prima::real {

namespace {

// ggml's type numbers as assigned in the GGUF specification; numbers that ggml retired are
// named after what they were.
constexpr std::array<const char*, 40> kGgmlNames = {
    "F32",   "F16",        "Q4_0",       "Q4_1",       "Q4_2",     "Q4_3",     "Q5_0",
    "Q5_1",  "Q8_0",       "Q8_1",       "Q2_K",       "Q3_K",     "Q4_K",     "Q5_K",
    "Q6_K",  "Q8_K",       "IQ2_XXS",    "IQ2_XS",     "IQ3_XXS",  "IQ1_S",    "IQ4_NL",
    "IQ3_S", "IQ2_S",      "IQ4_XS",     "I8",         "I16",      "I32",      "I64",
    "F64",   "IQ1_M",      "BF16",       "Q4_0_4_4",   "Q4_0_4_8", "Q4_0_8_8", "TQ1_0",
    "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4",
};

// The weight types prima's kernels decode. Kept here (not kernels::type_traits) so the
// reader does not depend on the kernels being linked; the values are the on-disk block
// layouts documented in kernels/cpu/quant.h.
const kernels::TypeTraits kF32{"F32", 1, 4};
const kernels::TypeTraits kF16{"F16", 1, 2};
const kernels::TypeTraits kBF16{"BF16", 1, 2};
const kernels::TypeTraits kQ4_0{"Q4_0", 32, 18};
const kernels::TypeTraits kQ4_1{"Q4_1", 32, 20};
const kernels::TypeTraits kQ8_0{"Q8_0", 32, 34};
const kernels::TypeTraits kQ6_K{"Q6_K", 256, 210};

}  // namespace

const char* ggml_type_name(std::uint32_t ggml_type) {
  return ggml_type < kGgmlNames.size() ? kGgmlNames[ggml_type] : "unknown";
}

const kernels::TypeTraits* gguf_tensor_traits(std::uint32_t ggml_type) {
  switch (static_cast<kernels::DType>(ggml_type)) {
    case kernels::DType::kF32:
      return &kF32;
    case kernels::DType::kF16:
      return &kF16;
    case kernels::DType::kBF16:
      return &kBF16;
    case kernels::DType::kQ4_0:
      return &kQ4_0;
    case kernels::DType::kQ4_1:
      return &kQ4_1;
    case kernels::DType::kQ8_0:
      return &kQ8_0;
    case kernels::DType::kQ6_K:
      return &kQ6_K;
    default:
      return nullptr;
  }
}

const char* gguf_type_name(GgufType t) {
  static constexpr std::array<const char*, 13> kNames = {"u8",  "i8",  "u16",  "i16",    "u32",
                                                         "i32", "f32", "bool", "string", "array",
                                                         "u64", "i64", "f64"};
  const auto i = static_cast<std::uint32_t>(t);
  return i < kNames.size() ? kNames[i] : "unknown";
}

std::size_t gguf_scalar_size(GgufType t) {
  switch (t) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kBool:
      return 1;
    case GgufType::kU16:
    case GgufType::kI16:
      return 2;
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kF32:
      return 4;
    case GgufType::kU64:
    case GgufType::kI64:
    case GgufType::kF64:
      return 8;
    default:
      return 0;
  }
}

}  // namespace prima::real
