// RealCluster (real_cluster.h): the real backend's assembly of one served replica. The engine
// gets the options' limits (max_model_len capped at the model's context), a request runs to
// completion on its loop, run() publishes while it runs and stop() ends it, and a missing
// model file is an error that names it.
#include "backends/real/real_cluster.h"

#include <gtest/gtest.h>

#include "tests/backends/real/model_fixture.h"
#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

real::RealBackendOptions options(const std::string& path) {
  real::RealBackendOptions bo;
  bo.model_path = path;
  bo.manifest = "none";
  bo.threads = 1;
  bo.max_num_seqs = 3;
  return bo;
}

TEST(RealCluster, BuildsTheEngineWithTheOptionsLimits) {
  RandomLlama m;
  const std::string path = temp_dir("real_cluster") + "/m.gguf";
  write_random_llama(m, path);

  real::RealBackendOptions bo = options(path);
  bo.max_model_len = 100;
  auto c = real::open_real_cluster(bo);
  ASSERT_TRUE(c.ok()) << c.status().message();
  real::RealCluster& cl = **c;
  ASSERT_TRUE(cl.is_leader());
  ASSERT_TRUE(cl.rt && cl.recorder && cl.engine);
  EXPECT_EQ(cl.max_model_len, 100);
  EXPECT_EQ(cl.engine->options().max_model_len, 100);
  EXPECT_EQ(cl.engine->options().scheduler.max_num_seqs, 3);
  EXPECT_EQ(cl.engine->options().scheduler.block_size, cl.backend->block_size());
  ASSERT_EQ(cl.engine->replicas().size(), 1u);
  EXPECT_EQ(cl.engine->replicas()[0]->kv().num_blocks(), cl.backend->num_kv_blocks());

  bool ended = false;
  std::vector<int> out;
  cl.engine->on_end = [&](const Sequence& s) {
    EXPECT_EQ(s.outcome, Outcome::kCompleted) << s.reason;
    out = s.output_ids;
    ended = true;
  };
  Request r;
  r.prompt_ids = {1, 2, 3};
  r.prompt_tokens = 3;
  r.max_output_tokens = 4;
  cl.engine->submit(r);
  cl.rt->run_until([&] { return ended; });
  EXPECT_EQ(out.size(), 4u);

  int published = 0;
  cl.run(
      [&] {
        if (++published == 3) cl.stop();
      },
      0.001);
  EXPECT_EQ(published, 3);
  cl.shutdown();
  cl.shutdown();  // idempotent
}

TEST(RealCluster, ContextIsTheModelsWithoutALimitOrABiggerOne) {
  RandomLlama m;
  const std::string path = temp_dir("real_cluster_ctx") + "/m.gguf";
  write_random_llama(m, path);
  for (int asked : {0, 100000}) {
    real::RealBackendOptions bo = options(path);
    bo.max_model_len = asked;
    auto c = real::open_real_cluster(bo);
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ((*c)->max_model_len, m.context) << asked;
    EXPECT_EQ((*c)->engine->options().max_model_len, m.context) << asked;
  }
}

TEST(RealCluster, AMissingModelIsAnErrorNamingIt) {
  auto c = real::open_real_cluster(options("/nonexistent/m.gguf"));
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.status().message().find("/nonexistent/m.gguf"), std::string::npos)
      << c.status().message();
}

}  // namespace
}  // namespace prima::testing
