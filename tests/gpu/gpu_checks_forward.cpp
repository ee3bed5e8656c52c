// Device checks of the forward pass's kernels (kernels.h) against kernels/cpu on SmolLM2's
// shapes: activation quantization (bit for bit), the quantized matmul of a batch of tokens
// against kernels::matmul (tolerance 1e-5 of the sum of |w x| per output: the same block
// products, another float summation order), the embedding lookup (bit for bit), RoPE of a
// batch at several positions, and the paged KV cache with attention (a prefill chunk after a
// cached context, grouped-query) against kernels::attention.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/quant.h"
#include "kernels/cuda/kernels.h"
#include "tests/gpu/check_support.h"
#include "tests/kernels/cpu/random_data.h"

namespace prima::gpu_checks {

namespace {

using kernels::DType;
using kernels::testing::randn;

std::vector<std::uint8_t> quantized_matrix(DType type, std::int64_t rows, std::int64_t cols,
                                           std::uint32_t seed) {
  const auto wf = randn(rows * cols, seed, 0.05f);
  std::vector<std::uint8_t> w(kernels::row_bytes(type, cols) * rows);
  for (std::int64_t r = 0; r < rows; ++r)
    kernels::quantize_row(type, wf.data() + r * cols, w.data() + r * kernels::row_bytes(type, cols),
                          cols);
  return w;
}

// The activations of a step converted for the weights of `type`: Q8_0/Q8_1 blocks (quantize_q8)
// or F16/BF16 values (to_half), against kernels/cpu's quantize_row, bit for bit.
CheckResult quantize(DType type) {
  const std::int64_t rows = 7, cols = 576;
  auto x = randn(rows * cols, 301, 2.0f);
  for (int i = 0; i < 32; ++i) x[32 + i] = 0.0f;  // an all-zero block
  const std::size_t bytes = kernels::row_bytes(type, cols) * rows;
  std::vector<std::uint8_t> want(bytes);
  for (std::int64_t r = 0; r < rows; ++r)
    kernels::quantize_row(type, x.data() + r * cols,
                          want.data() + r * kernels::row_bytes(type, cols), cols);
  DeviceBuffer dx(x), dy(bytes);
  if (type == DType::kF16 || type == DType::kBF16)
    finish(cuda::to_half(type, dx.as<float>(), dy.as<void>(), rows * cols, nullptr), "to_half");
  else
    finish(cuda::quantize_q8(type, dx.as<float>(), dy.as<void>(), rows, cols, nullptr),
           "quantize_q8");
  const auto got = dy.read<std::uint8_t>(bytes);
  for (std::size_t i = 0; i < bytes; ++i)
    if (got[i] != want[i])
      return {false, 1e9,
              std::string("quantize ") + kernels::type_traits(type)->name + ": byte " +
                  std::to_string(i) + " differs from kernels/cpu's"};
  return {true, 0,
          std::string("quantize ") + kernels::type_traits(type)->name + " 7x576, bit for bit"};
}

CheckResult matmul(DType type, std::int64_t tokens) {
  const std::int64_t rows = 1536, cols = 576;
  const auto w = quantized_matrix(type, rows, cols, 311);
  const auto x = randn(tokens * cols, 312);
  const kernels::WeightView view{type, w.data(), rows, cols, nullptr};
  kernels::ThreadPool pool(1);
  std::vector<float> ref(static_cast<std::size_t>(tokens * rows));
  kernels::matmul(view, x.data(), tokens, ref.data(), pool);
  std::vector<double> tol(ref.size());
  std::vector<float> row(static_cast<std::size_t>(cols));
  for (std::int64_t r = 0; r < rows; ++r) {
    kernels::dequantize_row(type, w.data() + r * kernels::row_bytes(type, cols), row.data(), cols);
    for (std::int64_t t = 0; t < tokens; ++t) {
      double s = 0;
      for (std::int64_t c = 0; c < cols; ++c) s += std::fabs(double(row[c]) * x[t * cols + c]);
      tol[t * rows + r] = 1e-5 * s + 1e-6;
    }
  }
  const DType act = cuda::activation_type(type);
  DeviceBuffer dw(w), dx(x), dq(kernels::row_bytes(act, cols) * tokens),
      dy(ref.size() * sizeof(float));
  finish(cuda::quantize_q8(act, dx.as<float>(), dq.as<void>(), tokens, cols, nullptr),
         "quantize_q8");
  finish(cuda::matmul_q8(type, dw.as<void>(), dq.as<void>(), dy.as<float>(), rows, cols, tokens,
                         nullptr),
         "matmul_q8");
  std::vector<double> want(ref.begin(), ref.end());
  return compare(dy.read<float>(ref.size()), want, tol,
                 std::string("matmul ") + kernels::type_traits(type)->name + " 1536x576, " +
                     std::to_string(tokens) + " tokens");
}

CheckResult embed() {
  const std::int64_t vocab = 300, cols = 576;
  const auto table = quantized_matrix(DType::kQ8_0, vocab, cols, 321);
  const std::vector<int> ids = {0, 299, 17, 17, 150};
  const std::size_t rb = kernels::row_bytes(DType::kQ8_0, cols);
  std::vector<float> want(ids.size() * cols);
  for (std::size_t t = 0; t < ids.size(); ++t)
    kernels::dequantize_row(DType::kQ8_0, table.data() + ids[t] * rb, want.data() + t * cols, cols);
  DeviceBuffer dt(table), di(ids), dy(want.size() * sizeof(float));
  finish(cuda::embed(DType::kQ8_0, dt.as<void>(), std::int64_t(rb), cols, di.as<int>(),
                     std::int64_t(ids.size()), dy.as<float>(), nullptr),
         "embed");
  const std::vector<double> w(want.begin(), want.end());
  return compare(dy.read<float>(want.size()), w, std::vector<double>(w.size(), 0.0),
                 "embed Q8_0 5 tokens of 576 (exact)");
}

CheckResult rope_tokens() {
  const int heads = 9, head_dim = 64;
  const std::vector<std::int64_t> pos = {0, 1, 17, 4000, 8191};
  auto x = randn(std::int64_t(pos.size()) * heads * head_dim, 331);
  DeviceBuffer dx(x), dp(pos);
  finish(cuda::rope_tokens(dx.as<float>(), std::int64_t(pos.size()), heads * head_dim, heads,
                           head_dim, head_dim, dp.as<std::int64_t>(), 100000.0f, nullptr),
         "rope_tokens");
  for (std::size_t t = 0; t < pos.size(); ++t)
    kernels::rope(x.data() + t * heads * head_dim, heads, head_dim, head_dim, pos[t], 100000.0f);
  std::vector<double> want(x.begin(), x.end()), tol(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) tol[i] = 1e-5 * std::fabs(want[i]) + 2e-6;
  return compare(dx.read<float>(x.size()), want, tol, "rope 5 tokens x 9x64 at positions to 8191");
}

// Q (9 heads) and K (3 heads) rows of 5 tokens in one launch, each against kernels::rope at
// its token's position.
CheckResult rope_qk_tokens() {
  const int qh = 9, kh = 3, head_dim = 64;
  const std::vector<std::int64_t> pos = {0, 3, 17, 4000, 8191};
  const std::int64_t T = std::int64_t(pos.size());
  auto q = randn(T * qh * head_dim, 332), k = randn(T * kh * head_dim, 333);
  DeviceBuffer dq(q), dk(k), dp(pos);
  finish(cuda::rope_qk_tokens(dq.as<float>(), qh * head_dim, qh, dk.as<float>(), kh * head_dim, kh,
                              T, head_dim, head_dim, dp.as<std::int64_t>(), 100000.0f, nullptr),
         "rope_qk_tokens");
  for (std::size_t t = 0; t < pos.size(); ++t) {
    kernels::rope(q.data() + t * qh * head_dim, qh, head_dim, head_dim, pos[t], 100000.0f);
    kernels::rope(k.data() + t * kh * head_dim, kh, head_dim, head_dim, pos[t], 100000.0f);
  }
  std::vector<float> got = dq.read<float>(q.size()), gk = dk.read<float>(k.size());
  got.insert(got.end(), gk.begin(), gk.end());
  std::vector<double> want(q.begin(), q.end()), tol;
  want.insert(want.end(), k.begin(), k.end());
  for (double v : want) tol.push_back(1e-5 * std::fabs(v) + 2e-6);
  return compare(got, want, tol, "rope of 5 tokens' Q (9x64) and K (3x64) in one launch");
}

// One sequence: a cached context of `cached` tokens, then a chunk of `chunk` new tokens whose
// K/V are written and which attend causally; 9 query heads over 3 KV heads of 64 (SmolLM2), or
// of head_dim D. mma: the tensor-core kernel (paged_attention_mma, tiles of 64 rows), not run
// where the build has none (the CPU execution layer).
CheckResult attention(std::int64_t cached, std::int64_t chunk, int D = 64, bool mma = false) {
  if (mma && !cuda::attention_mma_supported(D))
    return {true, 0, "not run: no tensor cores here (the CPU execution layer)"};
  const int heads = 9, kv_heads = 3, bs = 16;
  const int tile_rows = mma ? cuda::kAttentionMmaTileRows : cuda::kAttentionTileRows;
  const std::int64_t len = cached + chunk, blocks = (len + bs - 1) / bs + 2;
  std::vector<int> table;
  for (std::int64_t b = 0; b < blocks - 2; ++b) table.push_back(int(blocks - 1 - b));  // scattered
  const std::int64_t kv_elems = blocks * kv_heads * bs * D;
  std::vector<std::uint16_t> kc(kv_elems, 0), vc(kv_elems, 0);
  const kernels::KvLayer cpu_kv{kc.data(), vc.data(), bs, kv_heads, D};
  const auto k = randn(len * kv_heads * D, 341), v = randn(len * kv_heads * D, 342);
  const auto q = randn(chunk * heads * D, 343);
  kernels::write_kv(cpu_kv, table.data(), 0, len, k.data(), v.data());
  std::vector<float> want(static_cast<std::size_t>(chunk * heads * D));
  kernels::ThreadPool pool(1);
  const float scale = 0.125f;
  kernels::attention(cpu_kv, table.data(), cached, chunk, q.data(), heads, scale, want.data(),
                     pool);
  // The device: the same cache written by write_kv (all len tokens), then the chunk's rows.
  std::vector<int> slots(static_cast<std::size_t>(len)), offset(chunk, 0), ctx(chunk), tiles;
  for (std::int64_t p = 0; p < len; ++p) slots[p] = table[p / bs] * bs + int(p % bs);
  for (std::int64_t i = 0; i < chunk; ++i) ctx[i] = int(cached + i + 1);
  for (int b = 0; b < int(chunk); b += tile_rows)
    tiles.insert(tiles.end(), {b, std::min(int(chunk) - b, tile_rows)});
  DeviceBuffer dkc(kv_elems * 2), dvc(kv_elems * 2), dk(k), dv(v), dq(q), dtab(table),
      dslots(slots), doff(offset), dctx(ctx), dtiles(tiles), dout(want.size() * sizeof(float));
  const kernels::KvLayer dev_kv{dkc.as<std::uint16_t>(), dvc.as<std::uint16_t>(), bs, kv_heads, D};
  finish(cuda::write_kv(dev_kv, dk.as<float>(), dv.as<float>(), len, dslots.as<int>(), nullptr),
         "write_kv");
  const auto kc_dev = dkc.read<std::uint16_t>(std::size_t(kv_elems));
  for (std::int64_t p = 0; p < len; ++p)
    for (int h = 0; h < kv_heads; ++h)
      for (int d = 0; d < D; ++d) {
        const std::int64_t off = cpu_kv.at(table[p / bs], p % bs, h) + d;
        if (kc_dev[off] != kc[off])
          return {false, 1e9, "write_kv: K of position " + std::to_string(p) + " differs"};
      }
  if (mma)
    finish(cuda::paged_attention_mma(dev_kv, dq.as<float>(), heads, scale, dtab.as<int>(),
                                     doff.as<int>(), dctx.as<int>(), dtiles.as<int>(),
                                     int(tiles.size() / 2), dout.as<float>(), nullptr),
           "paged_attention_mma");
  else
    finish(cuda::paged_attention(dev_kv, dq.as<float>(), heads, scale, chunk, dtab.as<int>(),
                                 doff.as<int>(), dctx.as<int>(), dtiles.as<int>(),
                                 int(tiles.size() / 2), dout.as<float>(), nullptr),
           "paged_attention");
  // One f16 step of a probability (2^-11 relative) over the sum of |p v|, which is at most max|v|
  // (the tensor-core kernel rounds before its final normalisation: the same bound).
  std::vector<double> w(want.begin(), want.end()), tol(w.size(), 2e-3 * 4.0 + 1e-5);
  return compare(dout.read<float>(want.size()), w, tol,
                 std::string(mma ? "tensor-core" : "paged") + " attention 9/3 heads x " +
                     std::to_string(D) + ", " + std::to_string(cached) + " cached + " +
                     std::to_string(chunk) + " new tokens");
}

}  // namespace

void add_forward_checks(std::vector<Check>* out) {
  out->push_back({"quantize_q8_0", [] { return quantize(DType::kQ8_0); }});
  out->push_back({"quantize_q8_1", [] { return quantize(DType::kQ8_1); }});
  out->push_back({"to_half_f16", [] { return quantize(DType::kF16); }});
  out->push_back({"to_half_bf16", [] { return quantize(DType::kBF16); }});
  out->push_back({"matmul_q4_0_x5", [] { return matmul(DType::kQ4_0, 5); }});
  out->push_back({"matmul_q4_1_x5", [] { return matmul(DType::kQ4_1, 5); }});
  out->push_back({"matmul_q8_0_x1", [] { return matmul(DType::kQ8_0, 1); }});
  out->push_back({"embed_q8_0", embed});
  out->push_back({"rope_tokens", rope_tokens});
  out->push_back({"rope_qk_tokens", rope_qk_tokens});
  out->push_back({"attention_decode", [] { return attention(40, 1); }});
  out->push_back({"attention_prefill", [] { return attention(20, 13); }});
  // Three tiles of rows (16, 16, 5) over a context of several K/V tiles.
  out->push_back({"attention_prefill_tiles", [] { return attention(75, 37); }});
  out->push_back({"attention_fresh", [] { return attention(0, 2); }});  // no cached context
  out->push_back({"attention_mma_prefill", [] { return attention(100, 150, 64, true); }});
  out->push_back({"attention_mma_fresh_d128", [] { return attention(0, 200, 128, true); }});
}

}  // namespace prima::gpu_checks
