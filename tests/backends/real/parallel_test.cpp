// Tensor and pipeline parallelism across processes: `mpirun -np N prima generate --tp T --pp P`
// gives exactly the single-process greedy ids (random models: TP 2 and 4, PP 2, TP 2 x PP 2;
// SmolLM2: TP 3 and PP 2 when the model file is present).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "tests/backends/real/model_fixture.h"
#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

struct Layout {
  int tp, pp;
};

void expect_same_ids(const std::string& path, const std::string& prompt_args, int max_tokens,
                     const std::vector<Layout>& layouts) {
  const std::string gen = "generate --model " + path + " " + prompt_args +
                          " --ids --threads 1 --max-tokens " + std::to_string(max_tokens);
  auto single = run_prima(gen);
  ASSERT_EQ(single.exit_code, 0) << single.err;
  ASSERT_FALSE(single.out.empty());
  for (const Layout& l : layouts) {
    auto r = run_shell(mpirun_prima(l.tp * l.pp) + gen + " --tp " + std::to_string(l.tp) +
                       " --pp " + std::to_string(l.pp));
    ASSERT_EQ(r.exit_code, 0) << "tp " << l.tp << " pp " << l.pp << ": " << r.err;
    EXPECT_EQ(r.out, single.out) << "tp " << l.tp << " pp " << l.pp;
  }
}

TEST(Parallel, RandomModelTpAndPpGiveTheSingleProcessIds) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun not found";
  RandomLlama m;
  m.kv_heads = 4;  // TP 4 needs 4 KV heads
  m.layers = 3;
  const std::string path = temp_dir("par_random") + "/m.gguf";
  write_random_llama(m, path);
  expect_same_ids(path, "--prompt 'parallel ranks agree'", 16,
                  {{2, 1}, {4, 1}, {1, 2}, {2, 2}, {1, 3}});
}

TEST(Parallel, TpThatDoesNotDivideHeadsExitsTwo) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun not found";
  const std::string path = temp_dir("par_bad") + "/m.gguf";
  write_random_llama(RandomLlama{}, path);  // 4 heads
  auto r = run_shell(mpirun_prima(3) + "generate --model " + path + " --prompt hi --tp 3");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--tp 3 does not divide the model's attention heads (4)"), std::string::npos)
      << r.err;
}

TEST(Parallel, ReplicasThatDoNotSplitTheRanksExitTwo) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun not found";
  const std::string path = temp_dir("par_replicas") + "/m.gguf";
  write_random_llama(RandomLlama{}, path);
  auto r = run_shell(mpirun_prima(3) + "serve --backend real --port 0 --model " + path +
                     " --replicas 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--replicas 2: the 3 processes launched do not split into equal replicas"),
            std::string::npos)
      << r.err;
  r = run_shell(mpirun_prima(4) + "serve --backend real --port 0 --model " + path +
                " --replicas 2 --pp 2 --tp 2");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--replicas 2 x --tp 2 x --pp 2 = 8 ranks, but 4 processes were launched"),
            std::string::npos)
      << r.err;
}

TEST(Parallel, SmolLM2Tp3AndPp2GiveTheSingleProcessIds) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun not found";
  const std::string path = source_path("models/SmolLM2-135M-Instruct.Q4_1.gguf");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present (scripts/setup.sh)";
  expect_same_ids(path, "--prompt 'The three primary colors are' ", 16, {{3, 1}, {1, 2}});
}

// Packed weights (--repack): each rank packs its own row slice; every output is still one
// row's dot product with the packed operations, so the ids equal the single process's.
TEST(Parallel, RepackedTpAndPpGiveTheSingleProcessIds) {
  if (!have_mpirun()) GTEST_SKIP() << "mpirun not found";
  RandomLlama m;
  m.kv_heads = 4;
  m.layers = 3;
  const std::string path = temp_dir("par_repack") + "/m.gguf";
  write_random_llama(m, path);
  expect_same_ids(path, "--repack --prompt 'parallel ranks agree'", 16, {{2, 1}, {4, 1}, {2, 2}});
  const std::string smol = source_path("models/SmolLM2-135M-Instruct.Q4_1.gguf");
  if (std::filesystem::exists(smol))
    expect_same_ids(smol, "--repack --prompt 'The three primary colors are' ", 16, {{3, 1}});
}

}  // namespace
}  // namespace prima::testing
