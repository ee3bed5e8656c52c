// RealExecutor through the real engine: several requests submitted together to a
// ServingEngine on RealBackend (continuous batching, chunked prefill under a small token
// budget, so steps mix prefill chunks and decodes) each get the greedy ids they get alone;
// StepResults carry one id per sequence; health checks answer.
#include <gtest/gtest.h>

#include <cmath>

#include "backends/real/real_backend.h"
#include "backends/real/real_executor.h"
#include "backends/real/tokenizer.h"
#include "backends/wall/wall_runtime.h"
#include "engine/cluster/serving_engine.h"
#include "engine/metrics/recorder.h"
#include "tests/backends/real/forward_harness.h"
#include "tests/backends/real/model_fixture.h"
#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

TEST(RealExecutor, ConcurrentRequestsGetTheirAloneTokens) {
  RandomLlama m;
  m.seed = 4;
  const std::string path = temp_dir("exec_batch") + "/m.gguf";
  write_random_llama(m, path);

  real::RealBackendOptions bo;
  bo.model_path = path;
  bo.manifest = "none";
  bo.threads = 2;
  bo.max_num_seqs = 6;
  auto b = real::RealBackend::open(bo);
  ASSERT_TRUE(b.ok()) << b.status().message();
  auto& backend = **b;
  ASSERT_TRUE(backend.is_leader());
  EXPECT_EQ(backend.context_length(), 256);
  EXPECT_EQ(backend.num_kv_blocks(), 6 * 16);

  WallRuntime rt;
  Executor* ex = backend.executor(&rt);
  ASSERT_NE(ex, nullptr);
  cluster::EngineOptions eo;
  eo.scheduler.block_size = backend.block_size();
  eo.scheduler.max_num_seqs = 6;
  eo.scheduler.max_num_batched_tokens = 16;  // forces chunked prefill next to decodes
  cluster::ReplicaSetup rs;
  rs.executor = ex;
  rs.num_kv_blocks = backend.num_kv_blocks();
  metrics::Recorder rec(1);
  cluster::ServingEngine engine(&rt, eo, {rs}, &rec);

  const int kNew = 10;
  std::vector<std::vector<int>> prompts;
  for (int i = 0; i < 6; ++i) {
    std::vector<int> p;
    for (int j = 0; j < 3 + 7 * i; ++j) p.push_back((j * 31 + i * 17 + 5) % 256);
    prompts.push_back(p);
  }
  std::map<RequestId, std::vector<int>> got;
  int ended = 0;
  engine.on_end = [&](const Sequence& s) {
    EXPECT_EQ(s.outcome, Outcome::kCompleted) << s.reason;
    got[s.req.id] = s.output_ids;
    ++ended;
  };
  std::vector<RequestId> ids;
  for (const auto& p : prompts) {
    Request r;
    r.prompt_ids = p;
    r.prompt_tokens = static_cast<int>(p.size());
    r.max_output_tokens = kNew;
    ids.push_back(engine.submit(r));
  }
  rt.run_until([&] { return ended == 6; });
  Status health = unavailable("no answer");
  bool answered = false;
  ex->check_health([&](Status st) {
    health = st;
    answered = true;
  });
  rt.run_until([&] { return answered; });
  EXPECT_TRUE(health.ok()) << health.message();
  backend.shutdown();

  auto model = LoadedModel::open(path, 32);
  ASSERT_TRUE(model);
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    TestSeq s;
    s.prompt = prompts[i];
    for (int k = 0; k < 32; ++k) s.blocks.push_back(k);
    run_greedy(*model->fwd, model->config.vocab, {&s}, kNew);
    EXPECT_EQ(got[ids[i]], s.out) << "request " << i;
  }
}

TEST(RealExecutor, MakeInputCopiesTheStep) {
  Sequence seq;
  seq.req.id = 9;
  seq.req.prompt_ids = {10, 11, 12, 13, 14};
  seq.req.prompt_tokens = 5;
  seq.req.sampling.temperature = 0.5;
  seq.output_ids = {20, 21};
  seq.num_generated = 2;
  seq.blocks = {7, 3, 5};
  StepBatch p;
  p.step_id = 4;
  SeqWork w;
  w.request = 9;
  w.seq = &seq;
  w.num_tokens = 3;
  w.context_len = 7;  // positions 4, 5, 6: prompt[4], out[0], out[1]
  w.samples = true;
  p.add_seq(w);
  const real::StepInput in = real::RealExecutor::make_input(p, 4);
  ASSERT_EQ(in.seqs.size(), 1u);
  EXPECT_EQ(in.step_id, 4u);
  EXPECT_EQ(in.seqs[0].pos0, 4);
  EXPECT_EQ(in.seqs[0].tokens, (std::vector<int>{14, 20, 21}));
  EXPECT_EQ(in.seqs[0].blocks, (std::vector<int>{7, 3}));  // 7 tokens in blocks of 4
  EXPECT_TRUE(in.seqs[0].samples);
  EXPECT_EQ(in.seqs[0].sampling.temperature, 0.5);
  EXPECT_TRUE(in.seqs[0].score_ids.empty());
}

// A request scoring its prompt gets, per chunk, the prompt ids that follow the chunk's
// positions; before min_tokens its stop ids are masked.
TEST(RealExecutor, MakeInputScoresPromptChunksAndMasksStopIdsBeforeMinTokens) {
  Sequence seq;
  seq.req.id = 9;
  seq.req.prompt_ids = {10, 11, 12, 13, 14};
  seq.req.prompt_tokens = 5;
  seq.req.sampling.prompt_logprobs = 0;
  seq.req.stop_ids = {2, 3};
  seq.req.min_tokens = 1;
  StepBatch p;
  SeqWork w;
  w.request = 9;
  w.seq = &seq;
  w.num_tokens = 3;
  w.context_len = 3;  // positions 0, 1, 2 score prompt[1], prompt[2], prompt[3]
  w.samples = false;
  p.add_seq(w);
  real::StepInput in = real::RealExecutor::make_input(p, 4);
  EXPECT_EQ(in.seqs[0].score_ids, (std::vector<int>{11, 12, 13}));
  EXPECT_TRUE(in.seqs[0].sampling.logit_bias.empty());
  StepBatch last;  // the last chunk: position 3 scores prompt[4], position 4 samples
  w.num_tokens = 2;
  w.context_len = 5;
  w.samples = true;
  last.add_seq(w);
  in = real::RealExecutor::make_input(last, 4);
  EXPECT_EQ(in.seqs[0].score_ids, (std::vector<int>{14}));
  EXPECT_EQ(in.logit_rows(), (std::vector<std::int64_t>{0, 1}));
  ASSERT_EQ(in.seqs[0].sampling.logit_bias.size(), 2u);  // no stop id before 1 output token
  EXPECT_TRUE(std::isinf(in.seqs[0].sampling.logit_bias[0].second));
}

}  // namespace
}  // namespace prima::testing
