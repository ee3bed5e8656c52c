// Paged, causal, grouped-query attention over an f16 KV cache, bit for bit llama.cpp's CPU
// path without flash attention: q rounded to f16; K.q and P.V as its F16 GEMM sums them
// (16 lanes, see attention_kernels.h); scores scaled; softmax with llama.cpp's vector exp and
// its sum order (groups of 16 positions, ops_kernels.h); probabilities rounded to f16. attention()
// runs one (token, KV head) pair per work item on the pool: the query heads that read that KV
// head; each item writes only its own output slice. The inner loops over a KV block are per ISA
// (attention_avx2.cpp: F16C; portable: an f16 table), chosen once per process like matmul's
// (PRIMA_KERNELS=portable forces the portable ones); with AVX-512 a query row runs over its
// whole context at once for all the heads of a KV head (attention_avx512.cpp).
#include "kernels/cpu/attention.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/cpu/attention_kernels.h"
#include "kernels/cpu/ops_kernels.h"
#include "kernels/cpu/quant.h"

namespace prima::kernels {

namespace {

inline const std::uint16_t* slot(const std::uint16_t* base, const KvLayer& kv,
                                 const int* block_table, std::int64_t p, int kv_head) {
  return base + kv.at(block_table[p / kv.block_size], p % kv.block_size, kv_head);
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
                 float scale, detail::DotOrder order, float* scores) {
  const float* t = f16_table();
  const int lanes = order == detail::DotOrder::kGemm16 ? 16 : 64;
  const int full = d / lanes * lanes;
  float acc[64];
  for (int i = 0; i < count; ++i) {
    const std::uint16_t* kr = k + i * stride;
    for (int l = 0; l < lanes; ++l) acc[l] = 0.0f;
    for (int j = 0; j < full; j += lanes)
      for (int l = 0; l < lanes; ++l) acc[l] = std::fma(t[kr[j + l]], q[j + l], acc[l]);
    float s;
    detail::fold_lanes(acc, lanes, 1, &s);
    if (order == detail::DotOrder::kGemm16) {
      for (int j = full; j < d; ++j) s += q[j] * t[kr[j]];
    } else {
      double sd = s;
      for (int j = full; j < d; ++j) sd += double(q[j] * t[kr[j]]);
      s = static_cast<float>(sd);
    }
    scores[i] = s * scale;
  }
}

void round_f16_portable(float* x, std::int64_t n, float scale) {
  for (std::int64_t i = 0; i < n; ++i) x[i] = fp16_to_fp32(fp32_to_fp16(x[i] * scale));
}

void to_f16_portable(const float* x, std::uint16_t* out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = fp32_to_fp16(x[i]);
}

void pv_portable(const float* p, const std::uint16_t* v, std::int64_t stride, int count, int d,
                 std::int64_t pos0, int lanes, float* acc) {
  const float* t = f16_table();
  for (int i = 0; i < count; ++i) {
    const std::uint16_t* vr = v + i * stride;
    float* a = acc + ((pos0 + i) % lanes) * d;
    for (int j = 0; j < d; ++j) a[j] = std::fma(t[vr[j]], p[i], a[j]);
  }
}

const detail::AttentionKernels& active_kernels() {
  static const detail::AttentionKernels* k = [] {
    const char* env = std::getenv("PRIMA_KERNELS");
    const bool force_portable = env != nullptr && std::strcmp(env, "portable") == 0;
#if defined(__x86_64__) || defined(__i386__)
    const bool no_avx512 =
        env != nullptr && (std::strcmp(env, "avx2") == 0 || std::strcmp(env, "avxvnni") == 0);
    if (!force_portable && !no_avx512 && detail::cpu_has_avx512_attention())
      return &detail::attention_avx512_kernels();
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

// Softmax of scores[0..len) in llama.cpp's order, then rounded to f16 values.
void softmax_f16(const detail::AttentionKernels& ak, const detail::OpsKernels& ok, float* scores,
                 std::int64_t len) {
  // The maximum in 8 independent lanes (any order gives the same value, up to the sign of a
  // zero maximum, which x - max does not see).
  float m[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                -INFINITY, -INFINITY, -INFINITY, -INFINITY};
  std::int64_t p = 0;
  for (; p + 8 <= len; p += 8)
    for (int l = 0; l < 8; ++l) m[l] = scores[p + l] > m[l] ? scores[p + l] : m[l];
  for (; p < len; ++p) m[0] = scores[p] > m[0] ? scores[p] : m[0];
  float max = m[0];
  for (int l = 1; l < 8; ++l) max = m[l] > max ? m[l] : max;
  const double sum = ok.exp_sum(scores, len, max);
  ak.round_f16(scores, len, static_cast<float>(1.0 / sum));
}

// Per work item of attention_batch: scores, V-product lanes, the rounded query, row pointers.
struct Scratch {
  std::vector<float> scores;
  std::vector<float> qh;
  std::vector<const std::uint16_t*> k_rows, v_rows;
};

// Whether a query row takes the kernels' whole-context row path (kq_rows / pv_rows).
bool rows_path(const detail::AttentionKernels& ak, int head_dim) {
  return ak.kq_rows != nullptr && head_dim % 64 == 0;
}

// One query row of `heads` heads that share KV head kv_head (q and out: heads x head_dim, one
// after another) from positions [0, len), over the whole context at once from row pointers:
// each K and V row is read (and converted) once for all the heads.
void attend_rows(const detail::AttentionKernels& ak, const detail::OpsKernels& ok,
                 const KvLayer& kv, const int* block_table, std::int64_t len, const float* q,
                 int kv_head, int heads, float scale, detail::DotOrder order, float* out,
                 Scratch& s) {
  const int d = kv.head_dim;
  s.qh.assign(q, q + std::int64_t(heads) * d);
  ak.round_f16(s.qh.data(), std::int64_t(heads) * d, 1.0f);
  s.k_rows.resize(std::size_t(len));
  s.v_rows.resize(std::size_t(len));
  for (std::int64_t p0 = 0, b = 0; p0 < len; p0 += kv.block_size, ++b) {
    const std::int64_t base = kv.at(block_table[b], 0, kv_head);
    const std::int64_t n = len - p0 < kv.block_size ? len - p0 : kv.block_size;
    for (std::int64_t i = 0; i < n; ++i) {
      s.k_rows[std::size_t(p0 + i)] = kv.k + base + i * d;
      s.v_rows[std::size_t(p0 + i)] = kv.v + base + i * d;
    }
  }
  s.scores.resize(std::size_t(len) * std::size_t(heads));
  const int n = static_cast<int>(len);
  ak.kq_rows(s.qh.data(), heads, s.k_rows.data(), n, d, scale, order, s.scores.data());
  for (int h = 0; h < heads; ++h) softmax_f16(ak, ok, s.scores.data() + std::int64_t(h) * len, len);
  ak.pv_rows(s.scores.data(), heads, s.v_rows.data(), n, d, order, out);
}

// One query row of one head: out[0..head_dim) from positions [0, len), a KV block at a time
// through kq / pv / fold, the V product's lanes x head_dim accumulators after the len scores
// in s.scores.
void attend_one(const detail::AttentionKernels& ak, const detail::OpsKernels& ok, const KvLayer& kv,
                const int* block_table, std::int64_t len, const float* q, int kv_head, float scale,
                detail::DotOrder order, float* out, Scratch& s) {
  const int d = kv.head_dim;
  std::vector<float>& scratch = s.scores;
  std::vector<float>& qh = s.qh;
  qh.assign(q, q + d);
  ak.round_f16(qh.data(), d, 1.0f);
  const int lanes = order == detail::DotOrder::kGemm16 ? 16 : 64;
  scratch.assign(std::size_t(len) + std::size_t(lanes) * std::size_t(d), 0.0f);
  float* scores = scratch.data();
  float* acc = scores + len;
  for (std::int64_t p0 = 0; p0 < len; p0 += kv.block_size) {
    const int count = static_cast<int>(len - p0 < kv.block_size ? len - p0 : kv.block_size);
    ak.kq(qh.data(), slot(kv.k, kv, block_table, p0, kv_head), d, count, d, scale, order,
          scores + p0);
  }
  softmax_f16(ak, ok, scores, len);
  for (std::int64_t p0 = 0; p0 < len; p0 += kv.block_size) {
    const int count = static_cast<int>(len - p0 < kv.block_size ? len - p0 : kv.block_size);
    ak.pv(scores + p0, slot(kv.v, kv, block_table, p0, kv_head), d, count, d, p0, lanes, acc);
  }
  ak.fold(acc, lanes, d, out);
}

}  // namespace

namespace detail {
void fold_lanes(const float* acc, int lanes, int d, float* out) {
  float g[16];
  for (int j = 0; j < d; ++j) {
    for (int l = 0; l < 16; ++l) {
      const float* a = acc + std::size_t(l) * d + j;
      g[l] = lanes == 16 ? a[0]
                         : (a[0] + a[32 * std::size_t(d)]) +
                               (a[16 * std::size_t(d)] + a[48 * std::size_t(d)]);
    }
    out[j] = reduce16(g);
  }
}

const AttentionKernels& attention_portable_kernels() {
  static const AttentionKernels k{"portable",  &kq_portable,        &pv_portable,
                                  &fold_lanes, &round_f16_portable, &to_f16_portable};
  return k;
}
}  // namespace detail

void write_kv(const KvLayer& kv, const int* block_table, std::int64_t pos0, std::int64_t n,
              const float* k, const float* v) {
  const std::int64_t ts = kv.token_stride();
  const detail::AttentionKernels& ak = active_kernels();
  const int d = kv.head_dim;
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t p = pos0 + i;
    for (int h = 0; h < kv.kv_heads; ++h) {
      const std::int64_t off = kv.at(block_table[p / kv.block_size], p % kv.block_size, h);
      ak.to_f16(k + i * ts + std::int64_t(h) * d, kv.k + off, d);
      ak.to_f16(v + i * ts + std::int64_t(h) * d, kv.v + off, d);
    }
  }
}

void attention_batch(const KvLayer& kv, const AttentionSeq* seqs, int count, int n_heads,
                     float scale, ThreadPool& pool) {
  const int group = n_heads / kv.kv_heads;
  const std::int64_t row = std::int64_t(n_heads) * kv.head_dim;
  const detail::AttentionKernels& ak = active_kernels();
  const detail::OpsKernels& ok = detail::active_ops_kernels();
  // Work items (sequence, query row, KV head) in order, each the `group` query heads that read
  // that KV head; first[s] is sequence s's first item.
  std::vector<std::int64_t> first(std::size_t(count) + 1, 0);
  std::int64_t longest = 0;
  for (int s = 0; s < count; ++s) {
    first[std::size_t(s) + 1] = first[std::size_t(s)] + seqs[s].n * kv.kv_heads;
    longest = std::max(longest, seqs[s].pos0 + seqs[s].n);
  }
  pool.parallel_for(
      first.back(),
      [&](std::int64_t begin, std::int64_t end, int) {
        // Per thread, kept between chunks and calls (a thread may run several chunks).
        thread_local Scratch scratch;
        scratch.scores.reserve(std::size_t(longest) * std::size_t(group) +
                               64 * std::size_t(kv.head_dim));
        int s =
            static_cast<int>(std::upper_bound(first.begin(), first.end(), begin) - first.begin()) -
            1;
        for (std::int64_t item = begin; item < end; ++item) {
          while (item >= first[std::size_t(s) + 1]) ++s;
          const AttentionSeq& q = seqs[s];
          // llama.cpp's dot order depends on the number of query rows (attention_kernels.h).
          const detail::DotOrder order =
              q.n == 1 ? detail::DotOrder::kVec64 : detail::DotOrder::kGemm16;
          const std::int64_t local = item - first[std::size_t(s)];
          const std::int64_t i = local / kv.kv_heads;
          const int g = static_cast<int>(local % kv.kv_heads);
          const std::int64_t off = i * row + std::int64_t(g) * group * kv.head_dim;
          const std::int64_t len = q.pos0 + i + 1;
          if (rows_path(ak, kv.head_dim)) {
            attend_rows(ak, ok, kv, q.block_table, len, q.q + off, g, group, scale, order,
                        q.out + off, scratch);
            continue;
          }
          for (int h = 0; h < group; ++h)
            attend_one(ak, ok, kv, q.block_table, len, q.q + off + h * kv.head_dim, g, scale, order,
                       q.out + off + h * kv.head_dim, scratch);
        }
      },
      1);
}

void attention(const KvLayer& kv, const int* block_table, std::int64_t pos0, std::int64_t n,
               const float* q, int n_heads, float scale, float* out, ThreadPool& pool) {
  const AttentionSeq one{block_table, pos0, n, q, out};
  attention_batch(kv, &one, 1, n_heads, scale, pool);
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
