// `prima generate` end to end on small random Llama models (and on SmolLM2 when the model
// file is present): greedy ids equal the in-process forward pass, seeded sampling is
// reproducible, bad input exits 2 with a message.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>

#include "backends/real/tokenizer.h"
#include "kernels/cpu/packed.h"
#include "tests/backends/real/forward_harness.h"
#include "tests/backends/real/model_fixture.h"
#include "tests/support/run_prima.h"

namespace prima::testing {
namespace {

std::vector<int> parse_ids(const std::string& out) {
  std::istringstream in(out);
  std::vector<int> ids;
  int x;
  while (in >> x) ids.push_back(x);
  return ids;
}

// Greedy ids computed in process, cut after the first end-of-generation id.
std::vector<int> expected_greedy(const std::string& path, const std::string& prompt, int n,
                                 bool repack = false) {
  auto model = LoadedModel::open(path, 64, 16, {}, 2, nullptr, repack);
  if (!model) return {};
  auto vocab = real::vocab_from_gguf(*model->file);
  EXPECT_TRUE(vocab.ok());
  auto tok = real::Tokenizer::create(*vocab);
  EXPECT_TRUE(tok.ok());
  TestSeq s;
  s.id = 1;
  s.prompt = (*tok)->encode(prompt, true, true);
  for (int b = 0; b < 64; ++b) s.blocks.push_back(b);
  run_greedy(*model->fwd, model->config.vocab, {&s}, n);
  const auto eog = (*tok)->eog_ids();
  for (std::size_t i = 0; i < s.out.size(); ++i)
    if (std::find(eog.begin(), eog.end(), s.out[i]) != eog.end()) {
      s.out.resize(i + 1);
      break;
    }
  return s.out;
}

std::string random_model(const std::string& name, RandomLlama m = {}) {
  const std::string path = temp_dir(name) + "/m.gguf";
  write_random_llama(m, path);
  return path;
}

TEST(Generate, GreedyIdsEqualTheForwardPass) {
  for (std::uint32_t seed : {1u, 2u, 5u}) {
    RandomLlama m;
    m.seed = seed;
    const std::string path = random_model("gen_greedy_" + std::to_string(seed), m);
    const std::string prompt = "hello world, seed " + std::to_string(seed);
    auto r = run_prima("generate --model " + path + " --prompt '" + prompt +
                       "' --max-tokens 20 --ids --threads 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto ids = parse_ids(r.out);
    EXPECT_EQ(ids, expected_greedy(path, prompt, 20)) << "seed " << seed;
    EXPECT_NE(r.err.find("generated: " + std::to_string(ids.size()) + " tokens"), std::string::npos)
        << r.err;
  }
}

// --repack: the packed kernels where the CPU has them (else the GGUF layout, with a note);
// alone or in a batch of 4, the ids are the forward pass's with the same weights.
TEST(Generate, RepackedGreedyIdsEqualTheForwardPassInEveryBatch) {
  const std::string path = random_model("gen_repack");
  const std::string prompt = "packed panels";
  const auto want = expected_greedy(path, prompt, 20, /*repack=*/true);
  for (const char* batch : {"1", "4"}) {
    auto r = run_prima("generate --model " + path + " --prompt '" + prompt +
                       "' --max-tokens 20 --ids --threads 2 --repack --batch " + batch);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(parse_ids(r.out), want) << "batch " << batch;
    const bool note = r.err.find("--repack: this CPU has no AVX-512 VNNI") != std::string::npos;
    EXPECT_EQ(note, !kernels::repack_supported(kernels::DType::kQ4_1)) << r.err;
  }
}

TEST(Generate, SeededSamplingIsReproducible) {
  const std::string path = random_model("gen_sample");
  const std::string base = "generate --model " + path +
                           " --prompt 'abc' --max-tokens 24 --ids --temperature 40 --top-k 50 ";
  auto a = run_prima(base + "--seed 11");
  auto b = run_prima(base + "--seed 11");
  auto c = run_prima(base + "--seed 12");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(c.exit_code, 0) << c.err;
  EXPECT_EQ(parse_ids(a.out), parse_ids(b.out));
  EXPECT_NE(parse_ids(a.out), parse_ids(c.out));
}

TEST(Generate, StopStringEndsTheText) {
  const std::string path = random_model("gen_stop");
  auto full = run_prima("generate --model " + path + " --prompt 'xyz' --max-tokens 16");
  ASSERT_EQ(full.exit_code, 0) << full.err;
  std::string text = full.out;
  if (!text.empty() && text.back() == '\n') text.pop_back();
  ASSERT_GE(text.size(), 4u) << "completion too short to test: '" << text << "'";
  const std::string stop = text.substr(text.size() / 2, 2);
  auto r = run_prima("generate --model " + path + " --prompt 'xyz' --max-tokens 16 --stop '" +
                     stop + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string got = r.out;
  if (!got.empty() && got.back() == '\n') got.pop_back();
  EXPECT_EQ(got, text.substr(0, text.find(stop)));
}

TEST(Generate, BadInputExitsTwo) {
  auto r = run_prima("generate --model /nonexistent/model.gguf --prompt hi");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("/nonexistent/model.gguf"), std::string::npos) << r.err;

  const std::string dir = temp_dir("gen_bad");
  {
    std::FILE* f = std::fopen((dir + "/junk.gguf").c_str(), "wb");
    std::fputs("GGUF but not really a model", f);
    std::fclose(f);
  }
  r = run_prima("generate --model " + dir + "/junk.gguf --prompt hi");
  EXPECT_EQ(r.exit_code, 2) << r.err;

  const std::string path = random_model("gen_bad_ctx");  // context 256
  r = run_prima("generate --model " + path + " --prompt '" + std::string(300, 'a') + "'");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("context is 256 tokens"), std::string::npos) << r.err;

  r = run_prima("generate --model " + path + " --prompt hi --tp 2");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("processes were launched"), std::string::npos) << r.err;

  RandomLlama q;
  q.arch = "qwen2";
  const std::string qpath = random_model("gen_bad_arch", q);
  r = run_prima("generate --model " + qpath + " --prompt hi");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unsupported architecture 'qwen2'"), std::string::npos) << r.err;

  r = run_prima("generate --prompt hi");
  EXPECT_EQ(r.exit_code, 2);
}

TEST(Generate, SmolLM2ChatGreedyIsDeterministic) {
  const std::string path = source_path("models/SmolLM2-135M-Instruct.Q4_1.gguf");
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present (scripts/setup.sh)";
  const std::string cmd = "generate --model " + path +
                          " --prompt 'What is the capital of France?' --chat --max-tokens 16";
  auto a = run_prima(cmd + " --ids");
  auto b = run_prima(cmd + " --ids");
  ASSERT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, b.out);
  EXPECT_GE(parse_ids(a.out).size(), 2u);
  // ChatML without the template's default system message: the model knows the answer.
  auto t = run_prima("generate --model " + path +
                     " --prompt \"$(printf '<|im_start|>user\\nWhat is the capital of France?"
                     "<|im_end|>\\n<|im_start|>assistant\\n')\" --max-tokens 16");
  ASSERT_EQ(t.exit_code, 0) << t.err;
  EXPECT_NE(t.out.find("Paris"), std::string::npos) << t.out;
}

}  // namespace
}  // namespace prima::testing
