// GgufWriter -> GgufFile round trips (every value type, arrays, every tensor type, alignment),
// the typed accessors, and the real SmolLM2 model file's header and tensors.
#include "backends/real/gguf.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "backends/real/gguf_parse.h"
#include "tests/backends/real/gguf_test_util.h"

namespace prima::real {
namespace {

using kernels::DType;
using testing::filler;
using testing::temp_path;

GgufArray numbers(GgufType t, std::vector<double> v) {
  GgufArray a;
  a.elem = t;
  a.numbers = std::move(v);
  return a;
}

TEST(GgufRoundTrip, EveryValueTypeAndTensorType) {
  GgufWriter w;
  w.set("s.string", std::string("héllo"));
  w.set("s.i64", std::int64_t{-1234567890123});
  w.set("s.u64", std::uint64_t{1} << 60);
  w.set("s.f64", 0.1);
  w.set("s.bool", false);
  w.set_u32("s.u32", 4000000000u);
  w.set_f32("s.f32", 1e-5f);
  w.set("s.replaced", std::int64_t{1});
  w.set("s.replaced", std::string("second"));
  w.set("a.u8", numbers(GgufType::kU8, {0, 255}));
  w.set("a.i8", numbers(GgufType::kI8, {-128, 127}));
  w.set("a.u16", numbers(GgufType::kU16, {65535}));
  w.set("a.i16", numbers(GgufType::kI16, {-32768}));
  w.set("a.u32", numbers(GgufType::kU32, {7, 4294967295.0}));
  w.set("a.i32", numbers(GgufType::kI32, {-2147483648.0}));
  w.set("a.f32", numbers(GgufType::kF32, {0.5, -2.25}));
  w.set("a.bool", numbers(GgufType::kBool, {1, 0, 1}));
  w.set("a.u64", numbers(GgufType::kU64, {1099511627776.0}));
  w.set("a.i64", numbers(GgufType::kI64, {-1099511627776.0}));
  w.set("a.f64", numbers(GgufType::kF64, {0.1}));
  w.set("a.empty", numbers(GgufType::kI32, {}));
  GgufArray strs;
  strs.elem = GgufType::kString;
  strs.strings = {"", "Ġthe", std::string("a\0b", 3)};
  w.set("a.string", strs);

  struct T {
    const char* name;
    DType type;
    std::vector<std::int64_t> dims;
    std::size_t nbytes;
  };
  const std::vector<T> ts = {
      {"f32", DType::kF32, {3, 2}, 24},
      {"f16", DType::kF16, {5}, 10},
      {"bf16", DType::kBF16, {2, 2, 2}, 16},
      {"q4_0", DType::kQ4_0, {64, 3}, 3 * 2 * 18},
      {"q4_1", DType::kQ4_1, {32, 1, 2}, 2 * 20},
      {"q8_0", DType::kQ8_0, {96}, 3 * 34},
      {"q6_k", DType::kQ6_K, {256, 2, 1, 1}, 2 * 210},
  };
  for (std::size_t i = 0; i < ts.size(); ++i) {
    const auto d = filler(ts[i].nbytes, static_cast<std::uint8_t>(i));
    w.add_tensor(ts[i].name, ts[i].type, ts[i].dims, d.data(), d.size());
  }
  const std::string path = temp_path("roundtrip.gguf");
  ASSERT_TRUE(w.write(path, 64).ok());

  auto r = GgufFile::open(path);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GgufFile& f = **r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.file_size(), std::filesystem::file_size(path));
  EXPECT_EQ(f.get_int("general.alignment").value(), 64);
  EXPECT_EQ(f.get_string("s.string").value(), "héllo");
  EXPECT_EQ(f.get_int("s.i64").value(), -1234567890123);
  EXPECT_EQ(std::get<std::uint64_t>(*f.find("s.u64")), std::uint64_t{1} << 60);
  EXPECT_EQ(f.get_float("s.f64").value(), 0.1);
  EXPECT_EQ(f.get_bool("s.bool").value(), false);
  EXPECT_EQ(f.get_int("s.u32").value(), 4000000000);
  EXPECT_EQ(f.get_float("s.f32").value(), static_cast<double>(1e-5f));  // stored as f32
  EXPECT_EQ(f.get_string("s.replaced").value(), "second");
  EXPECT_EQ(f.metadata().size(), 22u);  // 21 keys set + general.alignment

  auto arr = [&](const char* k) { return f.get_array(k).value(); };
  EXPECT_EQ(arr("a.u8")->elem, GgufType::kU8);
  EXPECT_EQ(arr("a.u8")->numbers, (std::vector<double>{0, 255}));
  EXPECT_EQ(arr("a.i8")->numbers, (std::vector<double>{-128, 127}));
  EXPECT_EQ(arr("a.u16")->numbers, (std::vector<double>{65535}));
  EXPECT_EQ(arr("a.i16")->numbers, (std::vector<double>{-32768}));
  EXPECT_EQ(arr("a.u32")->numbers, (std::vector<double>{7, 4294967295.0}));
  EXPECT_EQ(arr("a.i32")->numbers, (std::vector<double>{-2147483648.0}));
  EXPECT_EQ(arr("a.f32")->numbers, (std::vector<double>{0.5, -2.25}));
  EXPECT_EQ(arr("a.bool")->elem, GgufType::kBool);
  EXPECT_EQ(arr("a.bool")->numbers, (std::vector<double>{1, 0, 1}));
  EXPECT_EQ(arr("a.u64")->numbers, (std::vector<double>{1099511627776.0}));
  EXPECT_EQ(arr("a.i64")->numbers, (std::vector<double>{-1099511627776.0}));
  EXPECT_EQ(arr("a.f64")->numbers, (std::vector<double>{0.1}));
  EXPECT_TRUE(arr("a.empty")->numbers.empty());
  EXPECT_EQ(arr("a.string")->strings, strs.strings);

  ASSERT_EQ(f.tensors().size(), ts.size());
  for (std::size_t i = 0; i < ts.size(); ++i) {
    SCOPED_TRACE(ts[i].name);
    const TensorInfo* t = f.tensor(ts[i].name);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t, &f.tensors()[i]);
    EXPECT_EQ(t->type, ts[i].type);
    EXPECT_EQ(t->dims, ts[i].dims);
    EXPECT_EQ(t->nbytes, ts[i].nbytes);
    EXPECT_EQ(t->offset % 64, 0u);
    std::int64_t elems = 1;
    for (auto d : ts[i].dims) elems *= d;
    EXPECT_EQ(t->elements(), elems);
    EXPECT_EQ(t->rows(), elems / ts[i].dims[0]);
    const auto want = filler(ts[i].nbytes, static_cast<std::uint8_t>(i));
    ASSERT_EQ(std::vector<std::uint8_t>(t->data, t->data + t->nbytes), want);
  }
  EXPECT_EQ(f.tensor("missing"), nullptr);

  // write() writes exactly bytes().
  const auto bytes = w.bytes(64);
  std::ifstream in(path, std::ios::binary);
  const std::vector<std::uint8_t> disk((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(disk, bytes);
}

TEST(GgufRoundTrip, DefaultAlignmentZeroTensorsAndNullData) {
  GgufWriter w;
  w.set("k", std::string("v"));
  auto b = w.bytes();
  ASSERT_EQ(b.size() % 32, 0u);
  auto r = parse_gguf(b.data(), b.size(), "mem");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->alignment(), 32u);
  EXPECT_EQ((*r)->find("general.alignment"), nullptr);
  EXPECT_TRUE((*r)->tensors().empty());

  w.add_tensor("zeros", DType::kQ4_1, {64}, nullptr, 0);
  b = w.bytes();
  r = parse_gguf(b.data(), b.size(), "mem");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const TensorInfo* t = (*r)->tensor("zeros");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->nbytes, 40u);
  EXPECT_EQ(b.size(), 32 * ((b.size() - 40) / 32) + 40);  // no padding after the last tensor
  for (std::size_t i = 0; i < t->nbytes; ++i) EXPECT_EQ(t->data[i], 0);
}

// A layout's header followed by the tensors at its offsets is the file bytes() writes.
TEST(GgufWriter, LayoutIsTheFileWithoutItsData) {
  GgufWriter w;
  w.set("k", std::string("v"));
  const std::vector<std::uint8_t> a(40, 7), c(6, 9);
  w.add_tensor("a", DType::kQ4_1, {64}, a.data(), a.size());
  w.add_tensor_shape("b", DType::kF16, {3, 5});
  w.add_tensor("c", DType::kF16, {3}, c.data(), c.size());
  auto lay = w.layout(64);
  ASSERT_TRUE(lay.ok()) << lay.status().message();
  ASSERT_EQ(lay->offsets.size(), 3u);
  EXPECT_EQ(lay->sizes, (std::vector<std::uint64_t>{40, 30, 6}));
  EXPECT_EQ(lay->header.size() % 64, 0u);
  std::vector<std::uint8_t> file = lay->header;
  file.resize(lay->header.size() + lay->data_bytes, 0);
  std::copy(a.begin(), a.end(), file.begin() + lay->header.size() + lay->offsets[0]);
  std::copy(c.begin(), c.end(), file.begin() + lay->header.size() + lay->offsets[2]);
  EXPECT_EQ(file, w.bytes(64));  // the deferred tensor is zeros there
  auto r = parse_gguf(file.data(), file.size(), "mem");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->tensor("b")->nbytes, 30u);
  GgufWriter bad;
  bad.add_tensor_shape("q", DType::kQ8_0, {33});
  EXPECT_FALSE(bad.layout().ok());  // not a whole number of blocks
}

TEST(GgufWriter, RejectsInvalidInput) {
  auto fails = [](const GgufWriter& w, const std::string& what, std::uint64_t align = 32) {
    EXPECT_TRUE(w.bytes(align).empty()) << what;
    const Status s = w.write(temp_path("bad_writer.gguf"), align);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find(what), std::string::npos) << s.message();
  };
  GgufWriter a;
  a.add_tensor("x", DType::kQ8_0, {48}, nullptr, 0);
  fails(a, "row length 48 is not a multiple of the Q8_0 block size 32");
  GgufWriter b;
  const auto d = filler(8, 0);
  b.add_tensor("x", DType::kF32, {4}, d.data(), d.size());
  fails(b, "tensor 'x' has 8 bytes of data, its type and dims need 16");
  GgufWriter c;
  c.add_tensor("x", DType::kF32, {1}, nullptr, 0);
  c.add_tensor("x", DType::kF32, {1}, nullptr, 0);
  fails(c, "duplicate tensor name 'x'");
  GgufWriter e;
  e.add_tensor("x", DType::kQ8_1, {32}, nullptr, 0);
  fails(e, "unsupported ggml type 9 (Q8_1)");
  GgufWriter g;
  fails(g, "alignment 48 is not a power of two", 48);
  GgufWriter h;
  GgufArray nested;
  nested.elem = GgufType::kArray;
  h.set("k", nested);
  fails(h, "key 'k': array element type array cannot be written");
}

TEST(GgufAccessors, TypedGettersAndDefaults) {
  const auto b = testing::small_writer().bytes();
  auto r = parse_gguf(b.data(), b.size(), "small.gguf");
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GgufFile& f = **r;
  EXPECT_EQ(f.get_string("general.architecture").value(), "llama");
  EXPECT_EQ(f.get_int("llama.block_count").value(), 1);
  EXPECT_EQ(f.get_float("llama.block_count").value(), 1.0);
  EXPECT_FLOAT_EQ(static_cast<float>(f.get_float("llama.attention.layer_norm_rms_epsilon").value()),
                  1e-5f);
  EXPECT_TRUE(f.get_bool("t.bool").value());
  EXPECT_EQ(f.get_array("arr.u32").value()->numbers.size(), 3u);

  auto missing = f.get_int("nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.status().message(), "small.gguf: metadata key 'nope' is missing");
  auto wrong = f.get_int("general.architecture");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(wrong.status().message(),
            "small.gguf: metadata key 'general.architecture' is a string, expected an integer");
  EXPECT_FALSE(f.get_string("llama.block_count").ok());
  EXPECT_FALSE(f.get_bool("llama.block_count").ok());
  EXPECT_FALSE(f.get_float("arr.u32").ok());
  EXPECT_FALSE(f.get_array("t.bool").ok());

  EXPECT_EQ(f.get_int_or("llama.block_count", 9), 1);
  EXPECT_EQ(f.get_int_or("nope", 9), 9);
  EXPECT_EQ(f.get_float_or("nope", 2.5), 2.5);
  EXPECT_EQ(f.get_bool_or("nope", true), true);
  EXPECT_EQ(f.get_string_or("nope", "d"), "d");
  EXPECT_EQ(f.get_string_or("general.architecture", "d"), "llama");
}

TEST(GgufOpen, MissingFileIsNotFound) {
  auto r = GgufFile::open("/nonexistent/model.gguf");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/model.gguf"), std::string::npos);
}

// The real model (fetched by scripts/fetch-model.sh); verified against its committed manifest.
TEST(GgufRealModel, SmolLM2HeaderAndTensors) {
  const std::string path = std::string(PRIMA_MODEL_DIR) + "/SmolLM2-135M-Instruct.Q4_1.gguf";
  if (!std::filesystem::exists(path))
    GTEST_SKIP() << path << " is missing: run scripts/fetch-model.sh to download it";
  auto r = GgufFile::open(path);  // verifies <path>.sha256 when present
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GgufFile& f = **r;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.tensors().size(), 272u);
  EXPECT_EQ(f.get_string("general.architecture").value(), "llama");
  EXPECT_EQ(f.get_int("llama.block_count").value(), 30);
  EXPECT_EQ(f.get_int("llama.embedding_length").value(), 576);
  EXPECT_EQ(f.get_int("llama.attention.head_count").value(), 9);
  EXPECT_EQ(f.get_int("llama.attention.head_count_kv").value(), 3);
  EXPECT_EQ(f.get_int("llama.feed_forward_length").value(), 1536);
  EXPECT_EQ(f.get_string("tokenizer.ggml.model").value(), "gpt2");
  auto tokens = f.get_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens.ok()) << tokens.status().message();
  EXPECT_EQ((*tokens)->elem, GgufType::kString);
  ASSERT_EQ((*tokens)->strings.size(), 49152u);
  EXPECT_EQ((*tokens)->strings[0], "<|endoftext|>");
  EXPECT_EQ((*tokens)->strings[1], "<|im_start|>");
  EXPECT_EQ((*tokens)->strings[2], "<|im_end|>");

  const TensorInfo* emb = f.tensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->type, DType::kQ8_0);
  EXPECT_EQ(emb->dims, (std::vector<std::int64_t>{576, 49152}));
  EXPECT_EQ(emb->nbytes, 49152u * (576 / 32) * 34);
  const TensorInfo* down = f.tensor("blk.0.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->type, DType::kQ4_1);
  EXPECT_EQ(down->dims, (std::vector<std::int64_t>{1536, 576}));
  for (const char* norm :
       {"blk.0.attn_norm.weight", "blk.29.ffn_norm.weight", "output_norm.weight"}) {
    const TensorInfo* t = f.tensor(norm);
    ASSERT_NE(t, nullptr) << norm;
    EXPECT_EQ(t->type, DType::kF32) << norm;
    EXPECT_EQ(t->dims, (std::vector<std::int64_t>{576})) << norm;
  }
  EXPECT_EQ(f.tensor("output.weight"), nullptr);  // tied embeddings

  // Tensor data are addressed from one data section and fit in the file.
  const std::uint8_t* base = emb->data - emb->offset;
  std::uint64_t total = 0;
  for (const auto& t : f.tensors()) {
    EXPECT_EQ(t.data, base + t.offset) << t.name;
    total += t.nbytes;
  }
  EXPECT_LE(total, f.file_size());
}

}  // namespace
}  // namespace prima::real
