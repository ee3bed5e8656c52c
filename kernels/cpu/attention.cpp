// Paged, causal, grouped-query attention over an f16 KV cache, with llama.cpp's numerics
// (no flash attention): q rounded to f16, scores scaled, softmax in f32, probabilities
// rounded to f16 for the V product. attention() runs one (token, head) pair per work item
// on the pool; each item writes only its own output slice. The inner loops over a KV block
// are per ISA (attention_avx2.cpp: F16C; portable: an f16 table), chosen once per process
// like matmul's (PRIMA_KERNELS=portable forces the portable ones).
#include "kernels/cpu/attention.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cpu/attention_kernels.h"
#include "kernels/cpu/quant.h"

namespace prima::kernels {

namespace {

inline const std::uint16_t* slot(const std::uint16_t* base, const KvLayer& kv,
                                 const int* block_table, std::int64_t p, int kv_head) {
  const std::int64_t block = block_table[p / kv.block_size];
  return base + block * kv.block_stride() + (p % kv.block_size) * kv.token_stride() +
         std::int64_t(kv_head) * kv.head_dim;
}

// f16 -> f32 through a table (as ggml's portable path): 256 KiB, built once.
const float* f16_table() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (std::uint32_t h = 0; h < 65536; ++h) t[h] = fp16_to_fp32(std::uint16_t(h));
    return t;
  }();
  return table.data();
}

void kq_portable(const float* q, const std::uint16_t* k, std::int64_t stride, int count, int d,
                 float scale, float* scores) {
  const float* t = f16_table();
  for (int i = 0; i < count; ++i) {
    const std::uint16_t* kr = k + i * stride;
    float s = 0.0f;
    for (int j = 0; j < d; ++j) s += q[j] * t[kr[j]];
    scores[i] = s * scale;
  }
}

void pv_portable(const float* p, const std::uint16_t* v, std::int64_t stride, int count, int d,
                 float* out) {
  const float* t = f16_table();
  for (int i = 0; i < count; ++i) {
    const std::uint16_t* vr = v + i * stride;
    for (int j = 0; j < d; ++j) out[j] += p[i] * t[vr[j]];
  }
}

const detail::AttentionKernels& active_kernels() {
  static const detail::AttentionKernels* k = [] {
    const char* env = std::getenv("PRIMA_KERNELS");
    const bool force_portable = env != nullptr && std::strcmp(env, "portable") == 0;
#if defined(__x86_64__) || defined(__i386__)
    if (!force_portable && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c"))
      return &detail::attention_avx2_kernels();
#else
    (void)force_portable;
#endif
    return &detail::attention_portable_kernels();
  }();
  return *k;
}

// One query row of one head: out[0..head_dim) from positions [0, len), a KV block at a time.
void attend_one(const detail::AttentionKernels& ak, const KvLayer& kv, const int* block_table,
                std::int64_t len, const float* q, int kv_head, float scale, float* out,
                std::vector<float>& scores, std::vector<float>& qh) {
  const int d = kv.head_dim;
  const std::int64_t ts = kv.token_stride();
  for (int j = 0; j < d; ++j) qh[j] = fp16_to_fp32(fp32_to_fp16(q[j]));
  scores.resize(std::size_t(len));
  for (std::int64_t p0 = 0; p0 < len; p0 += kv.block_size) {
    const int count = static_cast<int>(len - p0 < kv.block_size ? len - p0 : kv.block_size);
    ak.kq(qh.data(), slot(kv.k, kv, block_table, p0, kv_head), ts, count, d, scale,
          scores.data() + p0);
  }
  float max = -INFINITY;
  for (std::int64_t p = 0; p < len; ++p) max = scores[p] > max ? scores[p] : max;
  double sum = 0.0;
  for (std::int64_t p = 0; p < len; ++p) {
    scores[p] = std::exp(scores[p] - max);
    sum += scores[p];
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (std::int64_t p = 0; p < len; ++p) scores[p] = fp16_to_fp32(fp32_to_fp16(scores[p] * inv));
  for (int j = 0; j < d; ++j) out[j] = 0.0f;
  for (std::int64_t p0 = 0; p0 < len; p0 += kv.block_size) {
    const int count = static_cast<int>(len - p0 < kv.block_size ? len - p0 : kv.block_size);
    ak.pv(scores.data() + p0, slot(kv.v, kv, block_table, p0, kv_head), ts, count, d, out);
  }
}

}  // namespace

namespace detail {
const AttentionKernels& attention_portable_kernels() {
  static const AttentionKernels k{"portable", &kq_portable, &pv_portable};
  return k;
}
}  // namespace detail

void write_kv(const KvLayer& kv, const int* block_table, std::int64_t pos0, std::int64_t n,
              const float* k, const float* v) {
  const std::int64_t ts = kv.token_stride();
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t p = pos0 + i;
    const std::int64_t off =
        std::int64_t(block_table[p / kv.block_size]) * kv.block_stride() + (p % kv.block_size) * ts;
    for (std::int64_t j = 0; j < ts; ++j) {
      kv.k[off + j] = fp32_to_fp16(k[i * ts + j]);
      kv.v[off + j] = fp32_to_fp16(v[i * ts + j]);
    }
  }
}

void attention(const KvLayer& kv, const int* block_table, std::int64_t pos0, std::int64_t n,
               const float* q, int n_heads, float scale, float* out, ThreadPool& pool) {
  const int group = n_heads / kv.kv_heads;
  const std::int64_t row = std::int64_t(n_heads) * kv.head_dim;
  const detail::AttentionKernels& ak = active_kernels();
  pool.parallel_for(
      n * n_heads,
      [&](std::int64_t begin, std::int64_t end, int) {
        std::vector<float> scores;
        std::vector<float> qh(std::size_t(kv.head_dim));
        scores.reserve(std::size_t(pos0 + n));
        for (std::int64_t item = begin; item < end; ++item) {
          const std::int64_t i = item / n_heads;
          const int h = static_cast<int>(item % n_heads);
          const std::int64_t off = i * row + std::int64_t(h) * kv.head_dim;
          attend_one(ak, kv, block_table, pos0 + i + 1, q + off, h / group, scale, out + off,
                     scores, qh);
        }
      },
      1);
}

void attention_reference(const KvLayer& kv, const int* block_table, std::int64_t pos0,
                         std::int64_t n, const float* q, int n_heads, float scale, float* out) {
  const int group = n_heads / kv.kv_heads;
  const int d = kv.head_dim;
  const std::int64_t row = std::int64_t(n_heads) * d;
  std::vector<double> scores;
  std::vector<double> acc(std::size_t(d), 0.0);
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t len = pos0 + i + 1;
    for (int h = 0; h < n_heads; ++h) {
      const float* qq = q + i * row + std::int64_t(h) * d;
      scores.assign(std::size_t(len), 0.0);
      double max = -INFINITY;
      for (std::int64_t p = 0; p < len; ++p) {
        const std::uint16_t* k = slot(kv.k, kv, block_table, p, h / group);
        double s = 0.0;
        for (int j = 0; j < d; ++j) s += double(qq[j]) * fp16_to_fp32(k[j]);
        scores[p] = s * scale;
        max = scores[p] > max ? scores[p] : max;
      }
      double sum = 0.0;
      for (auto& s : scores) sum += (s = std::exp(s - max));
      acc.assign(std::size_t(d), 0.0);
      for (std::int64_t p = 0; p < len; ++p) {
        const std::uint16_t* v = slot(kv.v, kv, block_table, p, h / group);
        for (int j = 0; j < d; ++j) acc[j] += scores[p] / sum * fp16_to_fp32(v[j]);
      }
      for (int j = 0; j < d; ++j) out[i * row + std::int64_t(h) * d + j] = float(acc[j]);
    }
  }
}

}  // namespace prima::kernels
