// Test fixtures for the Llama forward pass: small random Llama models written with
// GgufWriter (weights in chosen GGUF types, a byte-level GPT-2 vocabulary so the tokenizer
// and `prima generate` work on them), and a plain double-precision reference forward pass
// (dequantized weights, dense causal attention) to hold the real one to.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "backends/real/gguf.h"
#include "kernels/cpu/quant.h"

namespace prima::testing {

struct RandomLlama {
  int layers = 2, hidden = 128, heads = 4, kv_heads = 2, ffn = 256, vocab = 300;
  int context = 256;
  float freq_base = 10000.f, eps = 1e-5f;
  kernels::DType attn_type = kernels::DType::kQ8_0;  // attn_q/k/v/output
  kernels::DType ffn_type = kernels::DType::kQ4_1;   // ffn_gate/up/down
  kernels::DType embd_type = kernels::DType::kQ8_0;  // token_embd
  bool tied = true;                                  // no output.weight
  kernels::DType output_type = kernels::DType::kQ8_0;
  std::string arch = "llama";
  std::uint32_t seed = 1;
  bool skip_tensor_ffn_up1 = false;  // leave out blk.1.ffn_up.weight (error tests)
};

// GPT-2's byte -> printable code point mapping (the vocabulary's byte tokens).
inline std::string byte_token(int b) {
  int cp = b;
  const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
  if (!printable) {
    int n = 0;
    for (int x = 0; x < b; ++x) {
      const bool p = (x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255);
      if (!p) ++n;
    }
    cp = 256 + n;
  }
  std::string s;
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
  return s;
}

inline std::vector<std::uint8_t> random_tensor(kernels::DType t, std::int64_t rows,
                                               std::int64_t cols, float scale, float offset,
                                               std::mt19937& rng) {
  std::normal_distribution<float> nd(0.f, 1.f);
  const std::size_t rb = kernels::row_bytes(t, cols);
  std::vector<std::uint8_t> out(rb * rows);
  std::vector<float> row(cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    for (auto& x : row) x = offset + scale * nd(rng);
    kernels::quantize_row(t, row.data(), out.data() + r * rb, cols);
  }
  return out;
}

inline void write_random_llama(const RandomLlama& m, const std::string& path) {
  using kernels::DType;
  real::GgufWriter w;
  std::mt19937 rng(m.seed);
  w.set("general.architecture", std::string(m.arch));
  w.set("general.name", std::string("random-llama"));
  const std::string a = m.arch;
  w.set_u32(a + ".block_count", m.layers);
  w.set_u32(a + ".embedding_length", m.hidden);
  w.set_u32(a + ".feed_forward_length", m.ffn);
  w.set_u32(a + ".attention.head_count", m.heads);
  w.set_u32(a + ".attention.head_count_kv", m.kv_heads);
  w.set_u32(a + ".context_length", m.context);
  w.set_f32(a + ".attention.layer_norm_rms_epsilon", m.eps);
  w.set_f32(a + ".rope.freq_base", m.freq_base);
  w.set_u32(a + ".rope.dimension_count", m.hidden / m.heads);
  // Vocabulary: 256 byte tokens, then <|endoftext|> (eos), <|im_start|>, <|im_end|>, fillers.
  real::GgufArray toks{real::GgufType::kString, {}, {}};
  real::GgufArray types{real::GgufType::kI32, {}, {}};
  for (int b = 0; b < 256; ++b) {
    toks.strings.push_back(byte_token(b));
    types.numbers.push_back(1);
  }
  for (const char* s : {"<|endoftext|>", "<|im_start|>", "<|im_end|>"}) {
    toks.strings.push_back(s);
    types.numbers.push_back(3);
  }
  for (int i = static_cast<int>(toks.strings.size()); i < m.vocab; ++i) {
    toks.strings.push_back("<|extra_" + std::to_string(i) + "|>");
    types.numbers.push_back(4);
  }
  w.set("tokenizer.ggml.model", std::string("gpt2"));
  w.set("tokenizer.ggml.pre", std::string("gpt2"));
  w.set("tokenizer.ggml.tokens", toks);
  w.set("tokenizer.ggml.token_type", types);
  w.set("tokenizer.ggml.merges", real::GgufArray{real::GgufType::kString, {}, {}});
  w.set_u32("tokenizer.ggml.eos_token_id", 256);
  w.set_u32("tokenizer.ggml.bos_token_id", 256);
  w.set("tokenizer.ggml.add_bos_token", false);

  const std::int64_t H = m.hidden, D = m.hidden / m.heads, F = m.ffn;
  auto add = [&](const std::string& name, DType t, std::int64_t rows, std::int64_t cols,
                 float scale, float offset) {
    auto data = random_tensor(t, rows, cols, scale, offset, rng);
    if (rows == 1)
      w.add_tensor(name, t, {cols}, data.data(), data.size());
    else
      w.add_tensor(name, t, {cols, rows}, data.data(), data.size());
  };
  const float ws = 1.0f / std::sqrt(static_cast<float>(H));
  add("token_embd.weight", m.embd_type, m.vocab, H, 1.0f, 0.f);
  for (int l = 0; l < m.layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", DType::kF32, 1, H, 0.1f, 1.f);
    add(p + "attn_q.weight", m.attn_type, m.heads * D, H, 2 * ws, 0.f);
    add(p + "attn_k.weight", m.attn_type, m.kv_heads * D, H, 2 * ws, 0.f);
    add(p + "attn_v.weight", m.attn_type, m.kv_heads * D, H, ws, 0.f);
    add(p + "attn_output.weight", m.attn_type, H, m.heads * D, ws, 0.f);
    add(p + "ffn_norm.weight", DType::kF32, 1, H, 0.1f, 1.f);
    add(p + "ffn_gate.weight", m.ffn_type, F, H, ws, 0.f);
    if (!(m.skip_tensor_ffn_up1 && l == 1)) add(p + "ffn_up.weight", m.ffn_type, F, H, ws, 0.f);
    add(p + "ffn_down.weight", m.ffn_type, H, F, 1.0f / std::sqrt(float(F)), 0.f);
  }
  add("output_norm.weight", DType::kF32, 1, H, 0.1f, 1.f);
  if (!m.tied) add("output.weight", m.output_type, m.vocab, H, ws, 0.f);
  auto st = w.write(path);
  if (!st.ok()) throw std::runtime_error(st.message());
}

// Dequantized copy of a tensor (rows x cols, row-major) in double.
inline std::vector<double> dequant(const real::TensorInfo& t) {
  const std::int64_t cols = t.dims[0], rows = t.rows();
  std::vector<float> row(cols);
  std::vector<double> out(rows * cols);
  const std::size_t rb = kernels::row_bytes(t.type, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    kernels::dequantize_row(t.type, t.data + r * rb, row.data(), cols);
    for (std::int64_t c = 0; c < cols; ++c) out[r * cols + c] = row[c];
  }
  return out;
}

// Reference forward of one sequence's tokens (positions 0..n-1); returns the logits of every
// position (n x vocab).
inline std::vector<double> reference_logits(const real::GgufFile& f, const std::vector<int>& ids) {
  const int L = static_cast<int>(f.get_int_or("llama.block_count", 0));
  const int H = static_cast<int>(f.get_int_or("llama.embedding_length", 0));
  const int NH = static_cast<int>(f.get_int_or("llama.attention.head_count", 0));
  const int NKV = static_cast<int>(f.get_int_or("llama.attention.head_count_kv", 0));
  const int F = static_cast<int>(f.get_int_or("llama.feed_forward_length", 0));
  const double eps = f.get_float_or("llama.attention.layer_norm_rms_epsilon", 1e-5);
  const double base = f.get_float_or("llama.rope.freq_base", 10000);
  const int D = H / NH;
  const int n = static_cast<int>(ids.size());
  auto emb = dequant(*f.tensor("token_embd.weight"));
  const int V = static_cast<int>(f.tensor("token_embd.weight")->rows());
  std::vector<double> x(std::size_t(n) * H);
  for (int t = 0; t < n; ++t)
    for (int i = 0; i < H; ++i) x[t * H + i] = emb[std::size_t(ids[t]) * H + i];
  auto norm = [&](const std::vector<double>& in, const std::vector<double>& w) {
    std::vector<double> out(in.size());
    for (int t = 0; t < n; ++t) {
      double ss = 0;
      for (int i = 0; i < H; ++i) ss += in[t * H + i] * in[t * H + i];
      const double s = 1.0 / std::sqrt(ss / H + eps);
      for (int i = 0; i < H; ++i) out[t * H + i] = in[t * H + i] * s * w[i];
    }
    return out;
  };
  auto mm = [&](const std::vector<double>& in, int cols, const std::vector<double>& w, int rows) {
    std::vector<double> out(std::size_t(n) * rows);
    for (int t = 0; t < n; ++t)
      for (int r = 0; r < rows; ++r) {
        double s = 0;
        for (int c = 0; c < cols; ++c) s += in[t * cols + c] * w[std::size_t(r) * cols + c];
        out[t * rows + r] = s;
      }
    return out;
  };
  auto rope = [&](std::vector<double>& v, int nheads) {
    for (int t = 0; t < n; ++t)
      for (int h = 0; h < nheads; ++h)
        for (int i = 0; i < D / 2; ++i) {
          const double th = t * std::pow(base, -2.0 * i / D);
          double* p = &v[(std::size_t(t) * nheads + h) * D + 2 * i];
          const double a = p[0], b = p[1];
          p[0] = a * std::cos(th) - b * std::sin(th);
          p[1] = a * std::sin(th) + b * std::cos(th);
        }
  };
  for (int l = 0; l < L; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    auto h = norm(x, dequant(*f.tensor(p + "attn_norm.weight")));
    auto q = mm(h, H, dequant(*f.tensor(p + "attn_q.weight")), NH * D);
    auto k = mm(h, H, dequant(*f.tensor(p + "attn_k.weight")), NKV * D);
    auto v = mm(h, H, dequant(*f.tensor(p + "attn_v.weight")), NKV * D);
    rope(q, NH);
    rope(k, NKV);
    std::vector<double> att(std::size_t(n) * NH * D, 0.0);
    for (int t = 0; t < n; ++t)
      for (int hd = 0; hd < NH; ++hd) {
        const int kh = hd / (NH / NKV);
        std::vector<double> sc(t + 1);
        double mx = -1e300;
        for (int j = 0; j <= t; ++j) {
          double s = 0;
          for (int i = 0; i < D; ++i)
            s += q[(std::size_t(t) * NH + hd) * D + i] * k[(std::size_t(j) * NKV + kh) * D + i];
          sc[j] = s / std::sqrt(double(D));
          mx = std::max(mx, sc[j]);
        }
        double sum = 0;
        for (auto& s : sc) sum += (s = std::exp(s - mx));
        for (int j = 0; j <= t; ++j)
          for (int i = 0; i < D; ++i)
            att[(std::size_t(t) * NH + hd) * D + i] +=
                sc[j] / sum * v[(std::size_t(j) * NKV + kh) * D + i];
      }
    auto o = mm(att, NH * D, dequant(*f.tensor(p + "attn_output.weight")), H);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += o[i];
    h = norm(x, dequant(*f.tensor(p + "ffn_norm.weight")));
    auto g = mm(h, H, dequant(*f.tensor(p + "ffn_gate.weight")), F);
    auto u = mm(h, H, dequant(*f.tensor(p + "ffn_up.weight")), F);
    for (std::size_t i = 0; i < g.size(); ++i) g[i] = g[i] / (1 + std::exp(-g[i])) * u[i];
    auto d = mm(g, F, dequant(*f.tensor(p + "ffn_down.weight")), H);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] += d[i];
  }
  auto h = norm(x, dequant(*f.tensor("output_norm.weight")));
  const real::TensorInfo* out = f.tensor("output.weight");
  if (!out) out = f.tensor("token_embd.weight");
  return mm(h, H, dequant(*out), V);
}

}  // namespace prima::testing
