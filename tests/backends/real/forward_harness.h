// Test harness around LlamaForward: a model opened from a file with one rank's shard, and a
// tiny greedy "engine" that runs several sequences through mixed steps (prefill chunks and
// decodes in one batch) as the real engine forms them.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backends/real/kv_store.h"
#include "backends/real/llama_forward.h"
#include "backends/real/sampler.h"

namespace prima::testing {

struct LoadedModel {
  std::unique_ptr<real::GgufFile> file;
  real::LlamaConfig config;
  std::unique_ptr<real::LlamaWeights> weights;
  std::unique_ptr<real::KvStore> kv;
  std::unique_ptr<kernels::ThreadPool> pool;
  std::unique_ptr<real::LlamaForward> fwd;

  static std::unique_ptr<LoadedModel> open(const std::string& path, int num_blocks = 256,
                                           int block_size = 16, real::ShardSpec shard = {},
                                           int threads = 2,
                                           real::LlamaForward::AllReduce ar = nullptr,
                                           bool repack = false) {
    auto m = std::make_unique<LoadedModel>();
    auto f = real::GgufFile::open(path, {"none"});
    EXPECT_TRUE(f.ok()) << f.status().message();
    if (!f.ok()) return nullptr;
    m->file = std::move(*f);
    auto c = real::read_llama_config(*m->file);
    EXPECT_TRUE(c.ok()) << c.status().message();
    if (!c.ok()) return nullptr;
    m->config = *c;
    auto w = real::LlamaWeights::bind(*m->file, m->config, shard, repack);
    EXPECT_TRUE(w.ok()) << w.status().message();
    if (!w.ok()) return nullptr;
    m->weights = std::move(*w);
    m->kv = std::make_unique<real::KvStore>(m->weights->num_layers(), num_blocks, block_size,
                                            m->weights->local_kv_heads(), m->config.head_dim);
    m->pool = std::make_unique<kernels::ThreadPool>(threads);
    m->fwd = std::make_unique<real::LlamaForward>(m->weights.get(), m->kv.get(), m->pool.get(),
                                                  std::move(ar));
    return m;
  }
};

struct TestSeq {
  std::uint64_t id = 0;
  std::vector<int> prompt;
  std::vector<int> blocks;
  int chunk = 1 << 30;  // prefill chunk size
  std::vector<int> out;
  int computed = 0;
  std::vector<float> last_logits;  // logits of the latest sampling row
};

// Runs the sequences together, greedy, until each has `max_new` tokens. `order_seed` != 0
// shuffles the order of the sequences inside every step.
// Forward: LlamaForward, or any forward pass with its forward(StepInput, logits*).
template <typename Forward>
void run_greedy(Forward& fwd, int vocab, std::vector<TestSeq*> seqs, int max_new,
                std::uint32_t order_seed = 0) {
  std::mt19937 rng(order_seed);
  std::uint64_t step = 0;
  for (;;) {
    real::StepInput s;
    s.step_id = step++;
    std::vector<TestSeq*> in;
    if (order_seed) std::shuffle(seqs.begin(), seqs.end(), rng);
    for (TestSeq* q : seqs) {
      if (static_cast<int>(q->out.size()) >= max_new) continue;
      std::vector<int> known = q->prompt;
      known.insert(known.end(), q->out.begin(), q->out.end());
      const int n = std::min<int>(static_cast<int>(known.size()) - q->computed, q->chunk);
      real::SeqInput si;
      si.request = q->id;
      si.pos0 = q->computed;
      si.tokens.assign(known.begin() + q->computed, known.begin() + q->computed + n);
      si.blocks = q->blocks;
      si.samples = q->computed + n == static_cast<int>(known.size());
      s.seqs.push_back(std::move(si));
      in.push_back(q);
    }
    if (in.empty()) return;
    std::vector<float> logits;
    Status st = fwd.forward(s, &logits);
    ASSERT_TRUE(st.ok()) << st.message();
    int r = 0;
    for (std::size_t i = 0; i < in.size(); ++i) {
      in[i]->computed += static_cast<int>(s.seqs[i].tokens.size());
      if (!s.seqs[i].samples) continue;
      const float* row = logits.data() + std::size_t(r++) * vocab;
      in[i]->last_logits.assign(row, row + vocab);
      in[i]->out.push_back(real::argmax(row, vocab));
    }
  }
}

}  // namespace prima::testing
