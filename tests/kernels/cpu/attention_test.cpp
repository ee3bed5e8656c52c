// Tests for kernels/cpu/attention.h: the pooled kernel against the double reference (GQA,
// several chunk shapes, decode and prefill), a shuffled non-contiguous block table equal to
// a contiguous cache, causality, and write_kv's placement and f16 rounding.
#include "kernels/cpu/attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

#include "kernels/cpu/attention_kernels.h"
#include "kernels/cpu/ops_kernels.h"
#include "kernels/cpu/quant.h"
#include "tests/kernels/cpu/random_data.h"

namespace prima::kernels {
namespace {

using testing::randn;

struct Cache {
  std::vector<std::uint16_t> k, v;
  KvLayer layer;
  Cache(int blocks, int block_size, int kv_heads, int head_dim) {
    layer.block_size = block_size;
    layer.kv_heads = kv_heads;
    layer.head_dim = head_dim;
    k.assign(std::size_t(blocks) * layer.block_stride(), 0x7e00);  // NaN: unwritten slots
    v.assign(k.size(), 0x7e00);
    layer.k = k.data();
    layer.v = v.data();
  }
};

// Writes a sequence of `len` tokens in chunks and runs attention on each chunk.
std::vector<float> run(Cache& c, const std::vector<int>& table, int len,
                       const std::vector<int>& chunks, int n_heads, ThreadPool* pool) {
  const int kvd = c.layer.kv_heads * c.layer.head_dim, qd = n_heads * c.layer.head_dim;
  const auto k = randn(std::size_t(len) * kvd, 1), v = randn(std::size_t(len) * kvd, 2);
  const auto q = randn(std::size_t(len) * qd, 3);
  std::vector<float> out(std::size_t(len) * qd, NAN);
  const float scale = 1.0f / std::sqrt(float(c.layer.head_dim));
  int pos = 0;
  for (int n : chunks) {
    write_kv(c.layer, table.data(), pos, n, k.data() + std::size_t(pos) * kvd,
             v.data() + std::size_t(pos) * kvd);
    if (pool)
      attention(c.layer, table.data(), pos, n, q.data() + std::size_t(pos) * qd, n_heads, scale,
                out.data() + std::size_t(pos) * qd, *pool);
    else
      attention_reference(c.layer, table.data(), pos, n, q.data() + std::size_t(pos) * qd, n_heads,
                          scale, out.data() + std::size_t(pos) * qd);
    pos += n;
  }
  return out;
}

TEST(Attention, MatchesReferenceWithGqa) {
  for (int threads : {1, 3}) {
    ThreadPool pool(threads);
    const std::vector<std::vector<int>> chunkings{
        {1, 1, 1, 1, 1}, {37}, {20, 1, 1, 15}, {16, 16, 5}};
    for (const auto& chunks : chunkings) {
      const int len = std::accumulate(chunks.begin(), chunks.end(), 0);
      Cache a(8, 16, 3, 64), b(8, 16, 3, 64);
      std::vector<int> table{5, 2, 7, 0, 3, 1, 6, 4};
      const auto got = run(a, table, len, chunks, 9, &pool);
      const auto ref = run(b, table, len, chunks, 9, nullptr);
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], ref[i], 3e-3 + 3e-3 * std::fabs(ref[i])) << "index " << i;
    }
  }
}

TEST(Attention, ShuffledBlockTableEqualsContiguousCache) {
  ThreadPool pool(2);
  const int len = 45;
  Cache contiguous(3, 16, 3, 64), paged(12, 16, 3, 64);
  std::vector<int> identity{0, 1, 2}, shuffled{9, 4, 11};
  const auto a = run(contiguous, identity, len, {30, 1, 14}, 9, &pool);
  const auto b = run(paged, shuffled, len, {30, 1, 14}, 9, &pool);
  EXPECT_EQ(a, b);
  // The K rows of token 17 (block 1, slot 1) sit in physical block 4, each KV head's among
  // that head's rows of the block.
  const auto& L = paged.layer;
  for (int h = 0; h < L.kv_heads; ++h)
    for (int j = 0; j < L.head_dim; ++j)
      ASSERT_EQ(paged.k[std::size_t(4 * L.block_stride() + (h * 16 + 1) * 64 + j)],
                contiguous.k[std::size_t(1 * L.block_stride() + (h * 16 + 1) * 64 + j)]);
}

TEST(Attention, IsCausalAndFirstTokenCopiesV) {
  ThreadPool pool(1);
  Cache c(2, 4, 1, 8);
  std::vector<int> table{1, 0};
  const int len = 6;
  const auto k = randn(len * 8, 10), v = randn(len * 8, 11), q = randn(len * 16, 12);
  write_kv(c.layer, table.data(), 0, len, k.data(), v.data());
  std::vector<float> out(len * 16);
  attention(c.layer, table.data(), 0, len, q.data(), 2, 0.3f, out.data(), pool);
  // Token 0 sees only itself: output = its V (f16-rounded), for both query heads.
  for (int h = 0; h < 2; ++h)
    for (int j = 0; j < 8; ++j) EXPECT_EQ(out[h * 8 + j], fp16_to_fp32(fp32_to_fp16(v[j])));
  // Changing a later token's K/V does not change earlier outputs.
  auto v2 = v;
  for (int j = 0; j < 8; ++j) v2[5 * 8 + j] += 10.0f;
  write_kv(c.layer, table.data(), 5, 1, k.data() + 40, v2.data() + 40);
  std::vector<float> out2(len * 16);
  attention(c.layer, table.data(), 0, len, q.data(), 2, 0.3f, out2.data(), pool);
  for (int i = 0; i < 5 * 16; ++i) ASSERT_EQ(out[i], out2[i]);
  bool changed = false;
  for (int i = 5 * 16; i < 6 * 16; ++i) changed |= out[i] != out2[i];
  EXPECT_TRUE(changed);
}

TEST(Attention, WriteKvRoundsToF16) {
  Cache c(2, 2, 2, 4);
  std::vector<int> table{1, 0};
  const auto k = randn(3 * 8, 20), v = randn(3 * 8, 21);
  write_kv(c.layer, table.data(), 0, 3, k.data(), v.data());
  // Block layout: kv head h's 2 slots x 4 values, then head h + 1's.
  for (int p = 0; p < 3; ++p)
    for (int h = 0; h < 2; ++h) {
      const std::size_t base =
          std::size_t(table[p / 2]) * 16 + std::size_t(h) * 8 + std::size_t(p % 2) * 4;
      for (int j = 0; j < 4; ++j) {
        EXPECT_EQ(c.k[base + j], fp32_to_fp16(k[p * 8 + h * 4 + j]));
        EXPECT_EQ(c.v[base + j], fp32_to_fp16(v[p * 8 + h * 4 + j]));
      }
    }
}

TEST(Attention, PortableAndAvx2InnerLoopsAgree) {
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c")))
    GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  const auto& a = detail::attention_portable_kernels();
  const auto& b = detail::attention_avx2_kernels();
  for (auto order : {detail::DotOrder::kGemm16, detail::DotOrder::kVec64}) {
    const int lanes = order == detail::DotOrder::kGemm16 ? 16 : 64;
    for (int d : {128, 64, 40, 7}) {
      const int count = 13, stride = 3 * d + 5;
      const auto kf = randn(std::size_t(count * stride), 30), q = randn(std::size_t(d), 31);
      const auto p = randn(std::size_t(count), 32);
      std::vector<std::uint16_t> k(kf.size());
      for (std::size_t i = 0; i < k.size(); ++i) k[i] = fp32_to_fp16(kf[i]);
      std::vector<float> sa(count), sb(count);
      a.kq(q.data(), k.data(), stride, count, d, 0.25f, order, sa.data());
      b.kq(q.data(), k.data(), stride, count, d, 0.25f, order, sb.data());
      // Positions 60 .. 72: the lanes wrap around.
      std::vector<float> acc_a(std::size_t(lanes) * d, 0.0f), acc_b(acc_a);
      a.pv(p.data(), k.data(), stride, count, d, 60, lanes, acc_a.data());
      b.pv(p.data(), k.data(), stride, count, d, 60, lanes, acc_b.data());
      EXPECT_EQ(acc_a, acc_b) << "d=" << d;  // one fma per (position, dim) in both
      if (d % lanes == 0) {
        EXPECT_EQ(sa, sb) << "d=" << d;  // the same lane order
      }
      for (int i = 0; i < count; ++i) {
        double e = 0;
        for (int j = 0; j < d; ++j)
          e += double(q[j]) * fp16_to_fp32(k[std::size_t(i * stride + j)]);
        ASSERT_NEAR(sa[i], 0.25 * e, 1e-5 * (1 + std::fabs(e))) << "d=" << d;
        ASSERT_NEAR(sb[i], 0.25 * e, 1e-5 * (1 + std::fabs(e))) << "d=" << d;
      }
      std::vector<float> out(static_cast<std::size_t>(d));
      detail::fold_lanes(acc_a.data(), lanes, d, out.data());
      for (int j = 0; j < d; ++j) {
        double e = 0.0;
        for (int i = 0; i < count; ++i)
          e += double(p[i]) * fp16_to_fp32(k[std::size_t(i * stride + j)]);
        ASSERT_NEAR(out[std::size_t(j)], e, 1e-5 * (1 + std::fabs(e))) << "d=" << d;
        // Position 60 + i went to lane (60 + i) % lanes: lane 59 % lanes is empty.
        ASSERT_EQ(acc_a[std::size_t((59 % lanes) * d + j)], 0.0f);
      }
    }
  }
}

// kq_rows / pv_rows (AVX-512: a whole context from row pointers, several query heads sharing
// each converted row, lanes in registers) equal the portable kq, pv and fold bit for bit, head
// by head, in both dot orders (a decode row's kVec64, 64 lanes; a prefill row's kGemm16, 16):
// contexts that fill the lanes and kq's 16-position folds partly, exactly and several times
// over; head_dim 64, 128 and 192; 1 to 5 heads (passes of up to 4 heads); rows scattered in
// memory.
TEST(Attention, Avx512RowKernelsEqualThePortableBlockKernels) {
  if (!detail::cpu_has_avx512_attention()) GTEST_SKIP() << "no AVX-512 on this CPU";
  const auto& a = detail::attention_portable_kernels();
  const auto& b = detail::attention_avx512_kernels();
  ASSERT_NE(b.kq_rows, nullptr);
  ASSERT_NE(b.pv_rows, nullptr);
  std::mt19937 rng(7);
  for (int d : {64, 128, 192}) {  // 192: the kernels' loop over any number of 64-chunks
    for (int len : {1, 2, 15, 16, 17, 47, 63, 64, 65, 100, 128, 129, 191, 300, 517}) {
      const int stride = 3 * d;  // rows of one KV head among three
      const auto kf = randn(std::size_t(len) * stride, 50 + len), vf = randn(kf.size(), 51 + len);
      std::vector<std::uint16_t> k(kf.size()), v(vf.size());
      for (std::size_t i = 0; i < k.size(); ++i) {
        k[i] = fp32_to_fp16(kf[i]);
        v[i] = fp32_to_fp16(vf[i]);
      }
      // Position i lives at row perm[i]: scattered, as paged blocks are.
      std::vector<int> perm(static_cast<std::size_t>(len));
      std::iota(perm.begin(), perm.end(), 0);
      std::shuffle(perm.begin(), perm.end(), rng);
      std::vector<const std::uint16_t*> kr(perm.size()), vr(perm.size());
      for (int i = 0; i < len; ++i) {
        kr[std::size_t(i)] = k.data() + std::size_t(perm[std::size_t(i)]) * stride + d;
        vr[std::size_t(i)] = v.data() + std::size_t(perm[std::size_t(i)]) * stride + d;
      }
      for (auto [order, lanes] :
           {std::pair{detail::DotOrder::kVec64, 64}, std::pair{detail::DotOrder::kGemm16, 16}})
        for (int heads : {1, 3, 5}) {
          const char* name = lanes == 64 ? "kVec64" : "kGemm16";
          auto q = randn(std::size_t(d) * heads, 52 + heads);
          a.round_f16(q.data(), std::int64_t(q.size()), 1.0f);
          const std::size_t n = std::size_t(len) * heads;
          std::vector<float> sa(n), sb(n, NAN);
          for (int h = 0; h < heads; ++h)
            for (int i = 0; i < len; ++i)
              a.kq(q.data() + std::size_t(h) * d, kr[std::size_t(i)], stride, 1, d, 0.125f, order,
                   &sa[std::size_t(h) * len + i]);
          b.kq_rows(q.data(), heads, kr.data(), len, d, 0.125f, order, sb.data());
          for (std::size_t i = 0; i < n; ++i)
            ASSERT_EQ(std::memcmp(&sa[i], &sb[i], 4), 0)
                << name << " kq d=" << d << " len=" << len << " heads=" << heads
                << " head=" << i / len << " i=" << i % len;
          auto prob = randn(n, 53 + heads);
          a.round_f16(prob.data(), std::int64_t(n), 1.0f);
          std::vector<float> oa(std::size_t(d) * heads), ob(oa.size(), NAN);
          for (int h = 0; h < heads; ++h) {
            std::vector<float> acc(std::size_t(lanes) * d, 0.0f);
            for (int i = 0; i < len; ++i)
              a.pv(&prob[std::size_t(h) * len + i], vr[std::size_t(i)], stride, 1, d, i, lanes,
                   acc.data());
            detail::fold_lanes(acc.data(), lanes, d, oa.data() + std::size_t(h) * d);
          }
          b.pv_rows(prob.data(), heads, vr.data(), len, d, order, ob.data());
          for (std::size_t j = 0; j < oa.size(); ++j)
            ASSERT_EQ(std::memcmp(&oa[j], &ob[j], 4), 0)
                << name << " pv d=" << d << " len=" << len << " heads=" << heads
                << " head=" << j / d << " j=" << j % d << ": " << oa[j] << " vs " << ob[j];
        }
    }
  }
}

TEST(Attention, Avx2F16RoundingAndFoldEqualThePortableOnes) {
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
        __builtin_cpu_supports("f16c")))
    GTEST_SKIP() << "no AVX2/FMA/F16C on this CPU";
  const auto& a = detail::attention_portable_kernels();
  const auto& b = detail::attention_avx2_kernels();
  // Normal, subnormal (< 6.1e-5), overflowing (>= 65520) and tie values.
  std::vector<float> x = randn(1003, 40);
  for (auto& v : x) v *= 3.0f;
  for (float v : {1e-6f, -3e-7f, 6.0e-8f, 2.9e-8f, 65504.0f, 65519.0f, 65520.0f, -70000.0f,
                  1.0009765625f + 0.00048828125f, 0.0f, -0.0f})
    x.push_back(v);
  // Scale 1 (the query rows) and a softmax normalisation's 1 / sum (in the vector part and
  // the tail).
  for (float scale : {1.0f, 1.0f / 37.3f}) {
    auto xa = x, xb = x;
    a.round_f16(xa.data(), std::int64_t(xa.size()), scale);
    b.round_f16(xb.data(), std::int64_t(xb.size()), scale);
    for (std::size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(std::memcmp(&xa[i], &xb[i], 4), 0)
          << x[i] << " x " << scale << ": " << xa[i] << " vs " << xb[i];
      ASSERT_EQ(xa[i], fp16_to_fp32(fp32_to_fp16(x[i] * scale))) << x[i] << " x " << scale;
    }
  }
  // The KV writes' conversion to f16 bits (the vector part and the tail).
  for (float v : {INFINITY, -INFINITY}) x.push_back(v);
  std::vector<std::uint16_t> ha(x.size()), hb(x.size());
  a.to_f16(x.data(), ha.data(), std::int64_t(x.size()));
  b.to_f16(x.data(), hb.data(), std::int64_t(x.size()));
  for (std::size_t i = 0; i < x.size(); ++i) {
    ASSERT_EQ(ha[i], hb[i]) << x[i];
    ASSERT_EQ(ha[i], fp32_to_fp16(x[i])) << x[i];
  }
  for (int lanes : {16, 64})
    for (int d : {64, 40, 7}) {
      const auto acc = randn(std::size_t(lanes) * d, std::uint32_t(lanes + d));
      std::vector<float> oa(static_cast<std::size_t>(d)), ob(static_cast<std::size_t>(d));
      a.fold(acc.data(), lanes, d, oa.data());
      b.fold(acc.data(), lanes, d, ob.data());
      EXPECT_EQ(oa, ob) << lanes << " lanes, d=" << d;
    }
}

}  // namespace
}  // namespace prima::kernels
