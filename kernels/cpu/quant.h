// Tensor element types of GGUF files and their block formats (ggml's numbering), with
// conversion to and from float. The block layouts are the on-disk layouts: weights are used
// in place from the memory-mapped file.
//
// Formats (QK = 32 elements per block unless noted):
//   Q4_0 {f16 d; u8 qs[16]}            x = (q - 8) * d
//   Q4_1 {f16 d; f16 m; u8 qs[16]}     x = q * d + m
//   Q8_0 {f16 d; i8 qs[32]}            x = q * d
//   Q8_1 {f16 d; f16 s; i8 qs[32]}     x = q * d, s = d * sum(q) (activations only)
//   Q6_K (256 per super-block) {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}
//   Q8_K (256 per block) {f32 d; i8 qs[256]; i16 bsums[16]} (activations only)
// In a 4-bit block the low nibble of byte j is element j and the high nibble element j+16.
// Stateless functions; thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace prima::kernels {

enum class DType : std::uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ6_K = 14,
  kQ8_K = 15,
  kBF16 = 30,
};

struct TypeTraits {
  const char* name;         // "Q4_1"
  int block_elems;          // elements per block (1 for F32/F16/BF16)
  std::size_t block_bytes;  // bytes per block
};

// Traits of a ggml type number; nullptr when prima does not support it.
const TypeTraits* type_traits(std::uint32_t ggml_type);
inline const TypeTraits* type_traits(DType t) {
  return type_traits(static_cast<std::uint32_t>(t));
}
// Bytes of a row of n elements (n a multiple of the block size).
std::size_t row_bytes(DType t, std::int64_t n);

float fp16_to_fp32(std::uint16_t h);
std::uint16_t fp32_to_fp16(float f);  // round to nearest even, as ggml does
float bf16_to_fp32(std::uint16_t h);
std::uint16_t fp32_to_bf16(float f);

#pragma pack(push, 1)
struct BlockQ4_0 {
  std::uint16_t d;
  std::uint8_t qs[16];
};
struct BlockQ4_1 {
  std::uint16_t d, m;
  std::uint8_t qs[16];
};
struct BlockQ8_0 {
  std::uint16_t d;
  std::int8_t qs[32];
};
struct BlockQ8_1 {
  std::uint16_t d, s;
  std::int8_t qs[32];
};
struct BlockQ6_K {
  std::uint8_t ql[128];
  std::uint8_t qh[64];
  std::int8_t scales[16];
  std::uint16_t d;
};
struct BlockQ8_K {
  float d;
  std::int8_t qs[256];
  std::int16_t bsums[16];
};
#pragma pack(pop)
static_assert(sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_1) == 20 && sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 36 && sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292);

// Row conversions; n is a multiple of the type's block size.
void dequantize_row(DType t, const void* src, float* dst, std::int64_t n);
// Reference quantization (round to nearest, as ggml's reference quantizers): used for
// activations (Q8_0, Q8_1, Q8_K) and by tests to write weights (all supported types).
void quantize_row(DType t, const float* src, void* dst, std::int64_t n);

}  // namespace prima::kernels
