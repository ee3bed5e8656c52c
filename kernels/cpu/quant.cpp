// GGUF block formats: type traits, row sizes, dequantization and reference quantization.
// The quantizers are round-to-nearest; the activation quantizers (Q8_0, Q8_1) scale by
// 127/amax and round half to even, as llama.cpp's x86 activation quantizers do, so that
// matmul results follow llama.cpp's. Stateless functions; thread-safe.
#include "kernels/cpu/quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace prima::kernels {

namespace {

constexpr TypeTraits kF32{"F32", 1, 4};
constexpr TypeTraits kF16{"F16", 1, 2};
constexpr TypeTraits kBF16{"BF16", 1, 2};
constexpr TypeTraits kQ4_0{"Q4_0", 32, sizeof(BlockQ4_0)};
constexpr TypeTraits kQ4_1{"Q4_1", 32, sizeof(BlockQ4_1)};
constexpr TypeTraits kQ8_0{"Q8_0", 32, sizeof(BlockQ8_0)};
constexpr TypeTraits kQ8_1{"Q8_1", 32, sizeof(BlockQ8_1)};
constexpr TypeTraits kQ6_K{"Q6_K", 256, sizeof(BlockQ6_K)};
constexpr TypeTraits kQ8_K{"Q8_K", 256, sizeof(BlockQ8_K)};

// Round half to even (the default FP environment), as _mm256_round_ps(_MM_FROUND_TO_NEAREST).
inline int round_even(float x) {
  return static_cast<int>(std::nearbyint(x));
}
// Round half away from zero, as ggml's nearest_int / roundf in the reference quantizers.
inline int round_away(float x) {
  return static_cast<int>(std::lround(x));
}

float block_amax(const float* x, int n) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
  return amax;
}

// The value of largest magnitude, with its sign (the first one on ties).
float block_signed_max(const float* x, int n) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < n; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      max = x[j];
    }
  }
  return max;
}

void quantize_q4_0(const float* x, BlockQ4_0* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 32) {
    const float max = block_signed_max(x, 32);
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::min(15, round_away(x[j] * id + 8.0f));
      const int q1 = std::min(15, round_away(x[j + 16] * id + 8.0f));
      y[i].qs[j] = static_cast<std::uint8_t>(std::max(0, q0) | std::max(0, q1) << 4);
    }
  }
}

void quantize_q4_1(const float* x, BlockQ4_1* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 32) {
    float mn = x[0], mx = x[0];
    for (int j = 1; j < 32; ++j) {
      mn = std::min(mn, x[j]);
      mx = std::max(mx, x[j]);
    }
    const float d = (mx - mn) / 15.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(mn);
    for (int j = 0; j < 16; ++j) {
      const int q0 = std::clamp(round_away((x[j] - mn) * id), 0, 15);
      const int q1 = std::clamp(round_away((x[j + 16] - mn) * id), 0, 15);
      y[i].qs[j] = static_cast<std::uint8_t>(q0 | q1 << 4);
    }
  }
}

// Q8_0 / Q8_1 share the body; Q8_1 also stores s = d * sum(q).
template <typename Block>
void quantize_q8(const float* x, Block* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 32) {
    const float amax = block_amax(x, 32);
    const float d = amax / 127.0f;
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    y[i].d = fp32_to_fp16(d);
    int sum = 0;
    for (int j = 0; j < 32; ++j) {
      const int q = round_even(x[j] * id);
      y[i].qs[j] = static_cast<std::int8_t>(q);
      sum += q;
    }
    if constexpr (std::is_same_v<Block, BlockQ8_1>) y[i].s = fp32_to_fp16(d * float(sum));
  }
}

void quantize_q6_k(const float* x, BlockQ6_K* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 256) {
    // Sub-block scales: the signed max of each 16 maps to -32.
    float sub[16];
    float max_scale = 0.0f, max_abs_scale = 0.0f;
    for (int s = 0; s < 16; ++s) {
      sub[s] = block_signed_max(x + 16 * s, 16) / -32.0f;
      if (std::fabs(sub[s]) > max_abs_scale) {
        max_abs_scale = std::fabs(sub[s]);
        max_scale = sub[s];
      }
    }
    BlockQ6_K& b = y[i];
    std::memset(&b, 0, sizeof(b));
    if (max_abs_scale == 0.0f) continue;
    const float iscale = -128.0f / max_scale;
    b.d = fp32_to_fp16(1.0f / iscale);
    const float d = fp16_to_fp32(b.d);
    std::uint8_t q[256];
    for (int s = 0; s < 16; ++s) {
      b.scales[s] = static_cast<std::int8_t>(std::min(127, round_away(iscale * sub[s])));
      const float ds = d * b.scales[s];
      for (int j = 0; j < 16; ++j) {
        const int l = ds != 0.0f ? std::clamp(round_away(x[16 * s + j] / ds), -32, 31) : 0;
        q[16 * s + j] = static_cast<std::uint8_t>(l + 32);
      }
    }
    // Two halves of 128: ql[64 h + l] holds element 128h + l (low nibble) and 128h + 64 + l
    // (high nibble) for l < 64; qh[32 h + l] holds the top 2 bits of 128h + l + 32k in bits 2k.
    for (int h = 0; h < 2; ++h) {
      const std::uint8_t* qq = q + 128 * h;
      for (int l = 0; l < 32; ++l) {
        b.ql[64 * h + l] = static_cast<std::uint8_t>((qq[l] & 0xf) | (qq[l + 64] & 0xf) << 4);
        b.ql[64 * h + l + 32] =
            static_cast<std::uint8_t>((qq[l + 32] & 0xf) | (qq[l + 96] & 0xf) << 4);
        b.qh[32 * h + l] =
            static_cast<std::uint8_t>((qq[l] >> 4) | (qq[l + 32] >> 4) << 2 |
                                      (qq[l + 64] >> 4) << 4 | (qq[l + 96] >> 4) << 6);
      }
    }
  }
}

void quantize_q8_k(const float* x, BlockQ8_K* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i, x += 256) {
    BlockQ8_K& b = y[i];
    const float max = block_signed_max(x, 256);
    if (max == 0.0f) {
      std::memset(&b, 0, sizeof(b));
      continue;
    }
    const float iscale = -127.0f / max;
    for (int j = 0; j < 256; ++j)
      b.qs[j] = static_cast<std::int8_t>(std::min(127, round_away(iscale * x[j])));
    for (int s = 0; s < 16; ++s) {
      int sum = 0;
      for (int j = 0; j < 16; ++j) sum += b.qs[16 * s + j];
      b.bsums[s] = static_cast<std::int16_t>(sum);
    }
    b.d = 1.0f / iscale;
  }
}

void dequantize_q6_k(const BlockQ6_K* x, float* y, std::int64_t nb) {
  for (std::int64_t i = 0; i < nb; ++i) {
    const float d = fp16_to_fp32(x[i].d);
    for (int h = 0; h < 2; ++h) {
      const std::uint8_t* ql = x[i].ql + 64 * h;
      const std::uint8_t* qh = x[i].qh + 32 * h;
      const std::int8_t* sc = x[i].scales + 8 * h;
      float* out = y + 256 * i + 128 * h;
      for (int l = 0; l < 32; ++l) {
        const int s = l / 16;
        const int q1 = ((ql[l] & 0xf) | ((qh[l] >> 0) & 3) << 4) - 32;
        const int q2 = ((ql[l + 32] & 0xf) | ((qh[l] >> 2) & 3) << 4) - 32;
        const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
        const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;
        out[l] = d * sc[s] * q1;
        out[l + 32] = d * sc[s + 2] * q2;
        out[l + 64] = d * sc[s + 4] * q3;
        out[l + 96] = d * sc[s + 6] * q4;
      }
    }
  }
}

}  // namespace

const TypeTraits* type_traits(std::uint32_t ggml_type) {
  switch (static_cast<DType>(ggml_type)) {
    case DType::kF32:
      return &kF32;
    case DType::kF16:
      return &kF16;
    case DType::kBF16:
      return &kBF16;
    case DType::kQ4_0:
      return &kQ4_0;
    case DType::kQ4_1:
      return &kQ4_1;
    case DType::kQ8_0:
      return &kQ8_0;
    case DType::kQ8_1:
      return &kQ8_1;
    case DType::kQ6_K:
      return &kQ6_K;
    case DType::kQ8_K:
      return &kQ8_K;
  }
  return nullptr;
}

std::size_t row_bytes(DType t, std::int64_t n) {
  const TypeTraits* tr = type_traits(t);
  if (tr == nullptr) return 0;
  return static_cast<std::size_t>(n / tr->block_elems) * tr->block_bytes;
}

void dequantize_row(DType t, const void* src, float* dst, std::int64_t n) {
  switch (t) {
    case DType::kF32:
      std::memcpy(dst, src, std::size_t(n) * 4);
      return;
    case DType::kF16: {
      const auto* s = static_cast<const std::uint16_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = fp16_to_fp32(s[i]);
      return;
    }
    case DType::kBF16: {
      const auto* s = static_cast<const std::uint16_t*>(src);
      for (std::int64_t i = 0; i < n; ++i) dst[i] = bf16_to_fp32(s[i]);
      return;
    }
    case DType::kQ4_0: {
      const auto* b = static_cast<const BlockQ4_0*>(src);
      for (std::int64_t i = 0; i < n / 32; ++i, dst += 32) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < 16; ++j) {
          dst[j] = float((b[i].qs[j] & 0xf) - 8) * d;
          dst[j + 16] = float((b[i].qs[j] >> 4) - 8) * d;
        }
      }
      return;
    }
    case DType::kQ4_1: {
      const auto* b = static_cast<const BlockQ4_1*>(src);
      for (std::int64_t i = 0; i < n / 32; ++i, dst += 32) {
        const float d = fp16_to_fp32(b[i].d), m = fp16_to_fp32(b[i].m);
        for (int j = 0; j < 16; ++j) {
          dst[j] = float(b[i].qs[j] & 0xf) * d + m;
          dst[j + 16] = float(b[i].qs[j] >> 4) * d + m;
        }
      }
      return;
    }
    case DType::kQ8_0: {
      const auto* b = static_cast<const BlockQ8_0*>(src);
      for (std::int64_t i = 0; i < n / 32; ++i, dst += 32) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < 32; ++j) dst[j] = float(b[i].qs[j]) * d;
      }
      return;
    }
    case DType::kQ8_1: {
      const auto* b = static_cast<const BlockQ8_1*>(src);
      for (std::int64_t i = 0; i < n / 32; ++i, dst += 32) {
        const float d = fp16_to_fp32(b[i].d);
        for (int j = 0; j < 32; ++j) dst[j] = float(b[i].qs[j]) * d;
      }
      return;
    }
    case DType::kQ6_K:
      dequantize_q6_k(static_cast<const BlockQ6_K*>(src), dst, n / 256);
      return;
    case DType::kQ8_K: {
      const auto* b = static_cast<const BlockQ8_K*>(src);
      for (std::int64_t i = 0; i < n / 256; ++i, dst += 256) {
        for (int j = 0; j < 256; ++j) dst[j] = float(b[i].qs[j]) * b[i].d;
      }
      return;
    }
  }
}

void quantize_row(DType t, const float* src, void* dst, std::int64_t n) {
  switch (t) {
    case DType::kF32:
      std::memcpy(dst, src, std::size_t(n) * 4);
      return;
    case DType::kF16: {
      auto* d = static_cast<std::uint16_t*>(dst);
      for (std::int64_t i = 0; i < n; ++i) d[i] = fp32_to_fp16(src[i]);
      return;
    }
    case DType::kBF16: {
      auto* d = static_cast<std::uint16_t*>(dst);
      for (std::int64_t i = 0; i < n; ++i) d[i] = fp32_to_bf16(src[i]);
      return;
    }
    case DType::kQ4_0:
      quantize_q4_0(src, static_cast<BlockQ4_0*>(dst), n / 32);
      return;
    case DType::kQ4_1:
      quantize_q4_1(src, static_cast<BlockQ4_1*>(dst), n / 32);
      return;
    case DType::kQ8_0:
      quantize_q8(src, static_cast<BlockQ8_0*>(dst), n / 32);
      return;
    case DType::kQ8_1:
      quantize_q8(src, static_cast<BlockQ8_1*>(dst), n / 32);
      return;
    case DType::kQ6_K:
      quantize_q6_k(src, static_cast<BlockQ6_K*>(dst), n / 256);
      return;
    case DType::kQ8_K:
      quantize_q8_k(src, static_cast<BlockQ8_K*>(dst), n / 256);
      return;
  }
}

}  // namespace prima::kernels
