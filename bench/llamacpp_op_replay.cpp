// prima_op_replay: replays each operator of a llama.cpp step, dumped by
// bench/llamacpp_dump_tensors.py, through prima's CPU kernels with llama.cpp's own inputs,
// and prints per operator and layer how many output values differ and by how much (max
// absolute difference, max ulps). Exit code 0 when every value is equal bit for bit, 1 when
// some differ, 2 on bad input. A development tool for keeping the kernels' numerics equal to
// llama.cpp's (docs/kernels.md); it needs llama-cpp-python to make the dumps, so CI does not
// run it.
//   prima_op_replay MODEL.gguf DUMP_DIR [--history PREFILL_DUMP_DIR] [--layer L]
// With --history (for a one-token decode dump), the K/V of the earlier positions come from
// the prefill dump of the same prompt.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/real/gguf.h"
#include "backends/real/kv_store.h"
#include "backends/real/llama_weights.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/ops.h"

namespace {

using prima::kernels::WeightView;

struct Dump {
  std::string dir;
  nlohmann::json index;
  static Dump open(const std::string& dir) {
    std::ifstream in(dir + "/index.json");
    if (!in) throw std::runtime_error(dir + "/index.json: cannot read");
    return {dir, nlohmann::json::parse(in)};
  }
  int tokens() const { return static_cast<int>(index["tokens"].size()); }
  // The first tensor with this name computed by this op.
  std::vector<float> get(const std::string& name, const std::string& op) const {
    for (const auto& t : index["tensors"])
      if (t["name"] == name && t["op"] == op && t.contains("file")) {
        const std::string path = dir + "/" + t["file"].get<std::string>();
        std::ifstream f(path, std::ios::binary | std::ios::ate);
        if (!f) throw std::runtime_error(path + ": cannot read");
        std::vector<float> v(static_cast<std::size_t>(f.tellg()) / 4);
        f.seekg(0);
        f.read(reinterpret_cast<char*>(v.data()), std::streamsize(v.size() * 4));
        return v;
      }
    throw std::runtime_error(dir + ": no tensor " + name + " computed by " + op);
  }
};

int differing = 0;

void compare(const char* what, int layer, const std::vector<float>& ours,
             const std::vector<float>& theirs) {
  if (ours.size() != theirs.size()) {
    std::printf("%-10s L%-3d size %zu vs llama.cpp's %zu\n", what, layer, ours.size(),
                theirs.size());
    ++differing;
    return;
  }
  std::size_t n = 0;
  double max_abs = 0;
  std::int64_t max_ulp = 0;
  for (std::size_t i = 0; i < ours.size(); ++i) {
    std::int32_t a, b;
    std::memcpy(&a, &ours[i], 4);
    std::memcpy(&b, &theirs[i], 4);
    if (a == b) continue;
    ++n;
    max_abs = std::max(max_abs, std::fabs(double(ours[i]) - theirs[i]));
    max_ulp = std::max<std::int64_t>(max_ulp, std::llabs(std::int64_t(a) - std::int64_t(b)));
  }
  if (n) ++differing;
  std::printf("%-10s L%-3d %7zu of %-7zu differ   max |d| %-10.3g max ulps %lld\n", what, layer, n,
              ours.size(), max_abs, static_cast<long long>(max_ulp));
}

}  // namespace

int main(int argc, char** argv) {
  using namespace prima;
  if (argc < 3) {
    std::fprintf(
        stderr, "usage: prima_op_replay MODEL.gguf DUMP_DIR [--history PREFILL_DIR] [--layer L]\n");
    return 2;
  }
  std::string history;
  int only = -1;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (std::strcmp(argv[i], "--history") == 0)
      history = argv[i + 1];
    else if (std::strcmp(argv[i], "--layer") == 0)
      only = std::atoi(argv[i + 1]);
    else {
      std::fprintf(stderr, "prima_op_replay: unknown option %s\n", argv[i]);
      return 2;
    }
  }
  try {
    const Dump d = Dump::open(argv[2]);
    real::GgufOpenOptions oo;
    oo.manifest = "none";
    auto f = real::GgufFile::open(argv[1], oo);
    if (!f.ok()) throw std::runtime_error(f.status().message());
    auto c = real::read_llama_config(**f);
    if (!c.ok()) throw std::runtime_error(c.status().message());
    auto w = real::LlamaWeights::bind(**f, *c, {});
    if (!w.ok()) throw std::runtime_error(w.status().message());
    const auto& cfg = *c;
    kernels::ThreadPool pool(1);
    const int T = d.tokens(), H = cfg.hidden, D = cfg.head_dim;
    const int P = history.empty() ? 0 : Dump::open(history).tokens();  // first position
    const int blocks_needed = (P + T + 15) / 16;
    real::KvStore kv(cfg.layers, blocks_needed, 16, cfg.kv_heads, D);
    std::vector<int> blocks(static_cast<std::size_t>(blocks_needed));
    std::iota(blocks.begin(), blocks.end(), 0);
    if (P) {
      const Dump h = Dump::open(history);
      for (int l = 0; l < cfg.layers; ++l)
        kernels::write_kv(kv.layer(l), blocks.data(), 0, P,
                          h.get("Kcur-" + std::to_string(l), "ROPE").data(),
                          h.get("Vcur-" + std::to_string(l), "MUL_MAT").data());
    }
    auto norm = [&](const std::vector<float>& x, const float* wt) {
      std::vector<float> o(x.size());
      for (int t = 0; t < T; ++t)
        kernels::rms_norm(x.data() + std::size_t(t) * H, wt, H, cfg.eps,
                          o.data() + std::size_t(t) * H);
      return o;
    };
    auto mm = [&](const WeightView& wv, const std::vector<float>& x) {
      std::vector<float> y(std::size_t(T) * std::size_t(wv.rows));
      kernels::matmul(wv, x.data(), T, y.data(), pool);
      return y;
    };
    for (int l = 0; l < cfg.layers; ++l) {
      if (only >= 0 && l != only) continue;
      const auto& L = (*w)->layer(l);
      const std::string s = "-" + std::to_string(l);
      const auto x =
          l == 0 ? d.get("embd", "GET_ROWS") : d.get("l_out-" + std::to_string(l - 1), "ADD");
      const auto an = d.get("attn_norm" + s, "MUL");
      compare("attn_norm", l, norm(x, L.attn_norm), an);
      const auto q = d.get("Qcur" + s, "MUL_MAT"), k = d.get("Kcur" + s, "MUL_MAT");
      const auto v = d.get("Vcur" + s, "MUL_MAT");
      compare("wq", l, mm(L.wq, an), q);
      compare("wk", l, mm(L.wk, an), k);
      compare("wv", l, mm(L.wv, an), v);
      auto qr = q, kr = k;
      for (int t = 0; t < T; ++t) {
        kernels::rope(qr.data() + std::size_t(t) * cfg.heads * D, cfg.heads, D, cfg.rot_dims, P + t,
                      cfg.freq_base);
        kernels::rope(kr.data() + std::size_t(t) * cfg.kv_heads * D, cfg.kv_heads, D, cfg.rot_dims,
                      P + t, cfg.freq_base);
      }
      const auto q_ll = d.get("Qcur" + s, "ROPE"), k_ll = d.get("Kcur" + s, "ROPE");
      compare("rope_q", l, qr, q_ll);
      compare("rope_k", l, kr, k_ll);
      const auto kvl = kv.layer(l);
      kernels::write_kv(kvl, blocks.data(), P, T, k_ll.data(), v.data());
      std::vector<float> att(std::size_t(T) * cfg.heads * D);
      kernels::attention(kvl, blocks.data(), P, T, q_ll.data(), cfg.heads,
                         1.0f / std::sqrt(float(D)), att.data(), pool);
      const auto ko = d.get("kqv_out" + s, "CONT");
      compare("attention", l, att, ko);
      compare("wo", l, mm(L.wo, ko), d.get("attn_out" + s, "MUL_MAT"));
      const auto fn = d.get("ffn_norm" + s, "MUL");
      compare("ffn_norm", l, norm(d.get("ffn_inp" + s, "ADD"), L.ffn_norm), fn);
      const auto g = d.get("ffn_gate" + s, "MUL_MAT"), u = d.get("ffn_up" + s, "MUL_MAT");
      compare("gate", l, mm(L.gate, fn), g);
      compare("up", l, mm(L.up, fn), u);
      const auto sw = d.get("ffn_swiglu" + s, "SWIGLU");
      std::vector<float> sw2(g.size());
      kernels::silu_mul(g.data(), u.data(), std::int64_t(g.size()), sw2.data(), L.gate.rows);
      compare("swiglu", l, sw2, sw);
      compare("down", l, mm(L.down, sw), d.get("ffn_out" + s, "MUL_MAT"));
    }
    const auto rn = d.get("result_norm", "MUL");
    compare("out_norm", cfg.layers,
            norm(d.get("l_out-" + std::to_string(cfg.layers - 1), "ADD"), (*w)->output_norm()), rn);
    compare("lm_head", cfg.layers, mm((*w)->output(), rn), d.get("result_output", "MUL_MAT"));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "prima_op_replay: %s\n", e.what());
    return 2;
  }
  std::printf("%s\n", differing ? "some operators differ from llama.cpp"
                                : "every operator equals llama.cpp bit for bit");
  return differing ? 1 : 0;
}
