// Synthetic models: the spec's parsing and its errors, the file (the shape's metadata, every
// tensor's size, the same bytes whatever the thread count), and the cache (made once, then
// reused).
#include "backends/real/synthetic_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "backends/real/gguf.h"
#include "backends/real/llama_weights.h"
#include "backends/real/tokenizer.h"
#include "tests/support/run_prima.h"

namespace prima::real {
namespace {

namespace fs = std::filesystem;
using kernels::DType;

std::vector<char> slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), {}};
}

TEST(SyntheticModel, ParsesNamesAndTypes) {
  auto s = parse_synthetic("llama-3-8b");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->shape.hidden, 4096);
  EXPECT_EQ(s->type, DType::kBF16);  // the default
  EXPECT_EQ(synthetic_file_name(*s), "llama-3-8b-bf16-s1.gguf");
  // Llama 3 8B: 8.03e9 parameters, 16.06 GB in BF16.
  EXPECT_NEAR(static_cast<double>(synthetic_params(*s)), 8.03e9, 0.01e9);
  const std::uint64_t norms = (2 * 32 + 1) * 4096;  // F32, the rest two bytes each
  EXPECT_EQ(synthetic_bytes(*s), 2 * synthetic_params(*s) + 2 * norms);
  auto q = parse_synthetic("smollm2-135m:q4_1");
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->type, DType::kQ4_1);
  EXPECT_NEAR(static_cast<double>(synthetic_params(*q)), 134.5e6, 0.5e6);

  auto bad = parse_synthetic("llama-9b");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown model 'llama-9b'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("llama-3-70b"), std::string::npos);  // the known ones
  bad = parse_synthetic("tiny:fp4");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("unknown weight type 'fp4' (known: bf16, f16, q8_0"),
            std::string::npos);
}

TEST(SyntheticModel, FileHasTheShapeAndIsTheSameOnAnyThreadCount) {
  const std::string dir = prima::testing::temp_dir("synthetic_file");
  auto spec = parse_synthetic("tiny:q4_1");
  ASSERT_TRUE(spec.ok());
  ASSERT_TRUE(write_synthetic(*spec, dir + "/a.gguf", 1).ok());
  ASSERT_TRUE(write_synthetic(*spec, dir + "/b.gguf", 3).ok());
  EXPECT_EQ(slurp(dir + "/a.gguf"), slurp(dir + "/b.gguf"));
  spec->seed = 2;
  ASSERT_TRUE(write_synthetic(*spec, dir + "/c.gguf", 2).ok());
  EXPECT_NE(slurp(dir + "/a.gguf"), slurp(dir + "/c.gguf"));

  auto f = GgufFile::open(dir + "/a.gguf");
  ASSERT_TRUE(f.ok()) << f.status().message();
  auto cfg = read_llama_config(**f);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->layers, 2);
  EXPECT_EQ(cfg->hidden, 256);
  EXPECT_EQ(cfg->heads, 4);
  EXPECT_EQ(cfg->kv_heads, 2);
  EXPECT_EQ(cfg->vocab, 512);
  std::uint64_t data = 0;
  for (const auto& t : (*f)->tensors()) data += t.nbytes;
  EXPECT_EQ(data, synthetic_bytes(*spec));
  EXPECT_EQ((*f)->tensor("blk.1.ffn_down.weight")->type, DType::kQ4_1);
  EXPECT_EQ((*f)->tensor("blk.1.ffn_norm.weight")->type, DType::kF32);
  EXPECT_EQ((*f)->tensor("output.weight"), nullptr);  // tiny is tied
  // A prompt tokenizes to its bytes.
  auto vocab = vocab_from_gguf(**f);
  ASSERT_TRUE(vocab.ok()) << vocab.status().message();
  auto tok = Tokenizer::create(std::move(*vocab));
  ASSERT_TRUE(tok.ok()) << tok.status().message();
  EXPECT_EQ((*tok)->encode("Hi!", false, false), (std::vector<int>{72, 105, 33}));
}

// A file of weights made on the device: the same header and norms as the written file (the
// spec in prima.synthetic.* keys besides), every matrix's data zeros (a hole), its spec read
// back, and the CPU path's check refuses it. synthetic_tensor names each tensor's draw.
TEST(SyntheticModel, DeviceWeightsFileHoldsTheNormsAndTheSpec) {
  const std::string dir = prima::testing::temp_dir("synthetic_device");
  auto spec = parse_synthetic("tiny:bf16");
  ASSERT_TRUE(spec.ok());
  spec->seed = 5;
  ASSERT_TRUE(write_synthetic(*spec, dir + "/full.gguf", 2).ok());
  SyntheticSpec dev = *spec;
  dev.device_weights = true;
  EXPECT_EQ(synthetic_file_name(dev), "tiny-bf16-s5-device.gguf");
  ASSERT_TRUE(write_synthetic(dev, dir + "/dev.gguf", 2).ok());
  EXPECT_EQ(synthetic_written_bytes(dev), 5u * 256 * 4);  // 2 x 2 layer norms + output_norm
  EXPECT_EQ(synthetic_written_bytes(*spec), synthetic_bytes(*spec));

  auto full = GgufFile::open(dir + "/full.gguf");
  auto d = GgufFile::open(dir + "/dev.gguf");
  ASSERT_TRUE(full.ok() && d.ok());
  ASSERT_EQ((*full)->tensors().size(), (*d)->tensors().size());
  for (std::size_t i = 0; i < (*d)->tensors().size(); ++i) {
    const TensorInfo& a = (*full)->tensors()[i];
    const TensorInfo& b = (*d)->tensors()[i];
    ASSERT_EQ(a.name, b.name);
    ASSERT_EQ(a.nbytes, b.nbytes);
    if (b.type == DType::kF32) {
      EXPECT_TRUE(std::equal(a.data, a.data + a.nbytes, b.data)) << b.name;
    } else {
      EXPECT_TRUE(std::all_of(b.data, b.data + b.nbytes, [](std::uint8_t x) { return x == 0; }))
          << b.name;
    }
    auto t = synthetic_tensor(*spec, b.name);
    ASSERT_TRUE(t.ok()) << b.name;
    EXPECT_EQ(t->index, i);
  }
  EXPECT_EQ(synthetic_tensor(*spec, "blk.0.attn_norm.weight")->mean, 1.0f);
  EXPECT_FALSE(synthetic_tensor(*spec, "blk.9.attn_q.weight").ok());

  auto none = device_synthetic_spec(**full);
  ASSERT_TRUE(none.ok());
  EXPECT_FALSE(none->has_value());
  EXPECT_TRUE(check_host_weights(**full).ok());
  auto back = device_synthetic_spec(**d);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_TRUE(back->has_value());
  EXPECT_EQ((*back)->shape.name, "tiny");
  EXPECT_EQ((*back)->type, DType::kBF16);
  EXPECT_EQ((*back)->seed, 5u);
  EXPECT_TRUE((*back)->device_weights);
  const Status refused = check_host_weights(**d);
  EXPECT_FALSE(refused.ok());
  EXPECT_NE(refused.message().find("holds no weight data"), std::string::npos);
  EXPECT_NE(refused.message().find("--synthetic tiny:bf16 --device cpu"), std::string::npos);
}

TEST(SyntheticModel, CacheMakesOnceThenReuses) {
  const std::string dir = prima::testing::temp_dir("synthetic_cache") + "/nested/cache";
  auto spec = parse_synthetic("tiny:q8_0");
  ASSERT_TRUE(spec.ok());
  int notes = 0;
  auto p = ensure_synthetic(*spec, dir, [&](const std::string&) { ++notes; });
  ASSERT_TRUE(p.ok()) << p.status().message();
  EXPECT_EQ(*p, dir + "/tiny-q8_0-s1.gguf");
  EXPECT_EQ(notes, 2);  // making, made
  const auto stamp = fs::last_write_time(*p);
  auto again = ensure_synthetic(*spec, dir, [&](const std::string&) { ++notes; });
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*again, *p);
  EXPECT_EQ(notes, 2);
  EXPECT_EQ(fs::last_write_time(*p), stamp);
  for (const auto& e : fs::directory_iterator(dir))  // no temporary file left behind
    EXPECT_EQ(e.path().filename().string().find(".tmp."), std::string::npos) << e.path();
}

TEST(SyntheticModel, CommandLine) {
  const std::string dir = prima::testing::temp_dir("synthetic_cli");
  ::setenv("PRIMA_SYNTHETIC_DIR", dir.c_str(), 1);
  auto r = prima::testing::run_prima(
      "generate --synthetic tiny:q4_0 --prompt 'The capital' "
      "--max-tokens 6 --ids");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("making synthetic tiny (q4_0"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), ' '), 5) << r.out;  // six ids
  EXPECT_TRUE(fs::exists(dir + "/tiny-q4_0-s1.gguf"));
  const std::pair<const char*, const char*> bad[] = {
      {"generate --synthetic tiny --model x.gguf --prompt x",
       "--model and --synthetic exclude each other"},
      {"generate --synthetic llama-9b --prompt x", "unknown model 'llama-9b'"},
      {"profile --synthetic tiny:q5 --out x.json", "unknown weight type 'q5'"},
      {"serve --backend sim --synthetic tiny", "--synthetic applies to --backend real only"}};
  for (const auto& [args, says] : bad) {
    auto b = prima::testing::run_prima(args);
    EXPECT_EQ(b.exit_code, 2) << args << "\n" << b.err;
    EXPECT_NE(b.err.find(says), std::string::npos) << args << "\n" << b.err;
  }
  ::unsetenv("PRIMA_SYNTHETIC_DIR");
}

}  // namespace
}  // namespace prima::real
