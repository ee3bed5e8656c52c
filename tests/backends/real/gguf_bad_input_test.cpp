// Corrupted and truncated GGUF input: every truncation errors, seeded random mutations never
// crash (the buffer ends at an inaccessible page, so an over-read would crash the test),
// each specific corruption gives its specific message, and the sha256 manifest catches a
// flipped byte.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "backends/real/gguf.h"
#include "backends/real/gguf_parse.h"
#include "tests/backends/real/gguf_test_util.h"

namespace prima::real {
namespace {

using namespace testing;  // NOLINT

// Parses and expects an error whose message contains every fragment.
void expect_error(const std::vector<std::uint8_t>& b, std::vector<std::string> fragments) {
  GuardedBytes g(b);
  auto r = parse_gguf(g.data(), g.size(), "bad.gguf");
  ASSERT_FALSE(r.ok()) << "parsed, expected: " << fragments[0];
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.status().message().rfind("bad.gguf: offset ", 0), 0u) << r.status().message();
  for (const auto& frag : fragments)
    EXPECT_NE(r.status().message().find(frag), std::string::npos)
        << "message: " << r.status().message() << "\nmissing: " << frag;
}

TEST(GgufBadInput, SmallFileParses) {
  const auto b = small_writer().bytes();
  GuardedBytes g(b);
  auto r = parse_gguf(g.data(), g.size(), "small.gguf");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ((*r)->tensors().size(), 3u);
}

TEST(GgufBadInput, EveryTruncationErrors) {
  const auto b = small_writer().bytes();
  ASSERT_GT(b.size(), 300u);
  for (std::size_t n = 0; n < b.size(); ++n) {
    const std::vector<std::uint8_t> prefix(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(n));
    GuardedBytes g(prefix);
    auto r = parse_gguf(g.data(), g.size(), "cut.gguf");
    ASSERT_FALSE(r.ok()) << "a file cut to " << n << " of " << b.size() << " bytes parsed";
    ASSERT_EQ(r.status().message().rfind("cut.gguf: offset ", 0), 0u) << r.status().message();
  }
  // Through open(): the path names the file.
  const std::string path = temp_path("truncated.gguf");
  write_file(path, std::vector<std::uint8_t>(b.begin(), b.begin() + 100));
  auto r = GgufFile::open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind(path + ": offset ", 0), 0u) << r.status().message();
  write_file(path, {});
  r = GgufFile::open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), path + ": offset 0: magic: the file is empty");
}

TEST(GgufBadInput, SeededMutationsNeverCrash) {
  const auto base = small_writer().bytes();
  std::mt19937_64 rng(20261202);
  int opened = 0, errors = 0;
  for (int it = 0; it < 4000; ++it) {
    auto b = base;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < flips; ++k) {
      const std::size_t at = rng() % b.size();
      switch (rng() % 3) {
        case 0:
          b[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
          break;
        case 1:
          b[at] = static_cast<std::uint8_t>(rng());
          break;
        default:
          b[at] = (rng() % 2) ? 0xff : 0x00;
          break;
      }
    }
    if (rng() % 8 == 0) b.resize(rng() % b.size());
    GuardedBytes g(b);
    auto r = parse_gguf(g.data(), g.size(), "mut.gguf");
    if (!r.ok()) {
      ++errors;
      ASSERT_FALSE(r.status().message().empty());
      continue;
    }
    ++opened;
    // Every tensor's bytes are readable (an out-of-range pointer hits the guard page).
    unsigned sum = 0;
    for (const auto& t : (*r)->tensors()) {
      ASSERT_GE(t.data, g.data());
      ASSERT_LE(t.data + t.nbytes, g.data() + g.size());
      for (std::uint64_t i = 0; i < t.nbytes; ++i) sum += t.data[i];
    }
    (void)sum;
  }
  // Both outcomes occur: mutations of data bytes keep the file valid.
  EXPECT_GT(opened, 100);
  EXPECT_GT(errors, 1000);
}

TEST(GgufBadInput, HeaderCorruptions) {
  const auto good = small_writer().bytes();
  auto b = good;
  b[0] = 'X';
  expect_error(b, {"offset 0: magic: not a GGUF file"});
  b = good;
  patch<std::uint32_t>(b, 4, 4);
  expect_error(b, {"offset 4: version: GGUF version 4 is not supported"});
  b = good;
  patch<std::uint64_t>(b, 8, std::uint64_t{1} << 50);
  expect_error(b, {"offset 8: tensor_count", "tensor infos cannot fit"});
  b = good;
  patch<std::uint64_t>(b, 16, std::uint64_t{1} << 50);
  expect_error(b, {"offset 16: kv_count", "KV pairs cannot fit"});
}

TEST(GgufBadInput, MetadataCorruptions) {
  const auto good = small_writer().bytes();
  // Key string length beyond the file.
  auto b = good;
  const std::size_t key = find_gguf_string(b, "general.architecture");
  patch<std::uint64_t>(b, key, std::uint64_t{1} << 40);
  expect_error(
      b, {"offset " + std::to_string(key), "kv[0] key", "string length 1099511627776 exceeds"});
  // Value type outside 0..12.
  b = good;
  const std::size_t type_at = key + 8 + 20;
  patch<std::uint32_t>(b, type_at, 13);
  expect_error(b, {"offset " + std::to_string(type_at),
                   "key 'general.architecture': value type 13 is not a GGUF type"});
  // Array count beyond the file.
  b = good;
  const std::size_t arr = find_gguf_string(b, "arr.u32") + 8 + 7 + 4;  // at the element type
  patch<std::uint64_t>(b, arr + 4, std::uint64_t{1} << 61);
  expect_error(b, {"offset " + std::to_string(arr + 4), "key 'arr.u32'", "array of",
                   "u32 needs at least 4 bytes each"});
  // Arrays of arrays.
  b = good;
  patch<std::uint32_t>(b, arr, 9);
  expect_error(b, {"key 'arr.u32': arrays of arrays are not supported"});
  // A bool byte other than 0/1.
  b = good;
  const std::size_t bool_at = find_gguf_string(b, "t.bool") + 8 + 6 + 4;
  ASSERT_EQ(b[bool_at], 1);
  b[bool_at] = 2;
  expect_error(b, {"key 't.bool': bool byte is 2"});
  // Duplicate key: rename "arr.str" to "arr.u32".
  b = good;
  const std::size_t str_key = find_gguf_string(b, "arr.str");
  std::memcpy(b.data() + str_key + 8, "arr.u32", 7);
  expect_error(b, {"offset " + std::to_string(str_key), "duplicate key 'arr.u32'"});
}

TEST(GgufBadInput, AlignmentNotPowerOfTwo) {
  auto b = small_writer().bytes(64);
  const std::size_t at = find_gguf_string(b, "general.alignment") + 8 + 17 + 4;
  ASSERT_EQ(peek<std::uint32_t>(b, at), 64u);
  patch<std::uint32_t>(b, at, 48);
  expect_error(
      b, {"offset " + std::to_string(at), "key 'general.alignment'", "48 is not a power of two"});
  patch<std::uint32_t>(b, at, 0);
  expect_error(b, {"key 'general.alignment'", "0 is not a power of two"});
}

TEST(GgufBadInput, TensorInfoCorruptions) {
  const auto good = small_writer().bytes();
  const InfoAt q = tensor_info_at(good, "blk.0.attn_q.weight");
  const InfoAt t = tensor_info_at(good, "tB");

  auto b = good;
  patch<std::uint32_t>(b, q.type, 12);
  expect_error(b, {"offset " + std::to_string(q.type),
                   "tensor 'blk.0.attn_q.weight': unsupported ggml type 12 (Q4_K)"});
  patch<std::uint32_t>(b, q.type, 1000);
  expect_error(b, {"unsupported ggml type 1000 (unknown)"});

  b = good;
  patch<std::uint32_t>(b, q.n_dims, 5);
  expect_error(b, {"offset " + std::to_string(q.n_dims),
                   "tensor 'blk.0.attn_q.weight' n_dims: 5 dimensions (1..4 allowed)"});
  patch<std::uint32_t>(b, q.n_dims, 0);
  expect_error(b, {"n_dims: 0 dimensions"});

  b = good;
  patch<std::uint64_t>(b, q.dims + 8, 0);
  expect_error(b, {"offset " + std::to_string(q.dims + 8),
                   "tensor 'blk.0.attn_q.weight' dims[1]: dimension is 0"});

  b = good;
  patch<std::uint64_t>(b, q.dims, std::uint64_t{1} << 40);
  patch<std::uint64_t>(b, q.dims + 8, std::uint64_t{1} << 40);
  expect_error(b, {"offset " + std::to_string(q.dims + 8), "dims[1]: element count overflows"});

  // 2^62 + 4 F32 elements: the byte count wraps to 16 in u64 arithmetic (a fuzzer find).
  b = good;
  patch<std::uint32_t>(b, q.type, 0);
  patch<std::uint64_t>(b, q.dims, (std::uint64_t{1} << 62) + 4);
  patch<std::uint64_t>(b, q.dims + 8, 1);
  expect_error(b, {"offset " + std::to_string(q.name),
                   "tensor 'blk.0.attn_q.weight': byte size of 4611686018427387908 F32 "
                   "elements overflows"});

  b = good;
  patch<std::uint64_t>(b, t.dims, 48);
  expect_error(b, {"tensor 'tB': row length 48 is not a multiple of the Q8_0 block size 32"});

  // Duplicate name: write "dup" and "dUp", then make the second "dup".
  GgufWriter w = small_writer();
  w.add_tensor("dup", kernels::DType::kF32, {8}, nullptr, 0);
  w.add_tensor("dUp", kernels::DType::kF32, {8}, nullptr, 0);
  b = w.bytes();
  const std::size_t dup2 = find_gguf_string(b, "dUp");
  b[dup2 + 9] = 'u';
  expect_error(b, {"offset " + std::to_string(dup2), "tensor 'dup': duplicate tensor name"});
}

TEST(GgufBadInput, TensorLayoutCorruptions) {
  const auto good = small_writer().bytes();
  const InfoAt q = tensor_info_at(good, "blk.0.attn_q.weight");
  const InfoAt t = tensor_info_at(good, "tB");
  const InfoAt n = tensor_info_at(good, "norm");

  auto b = good;
  patch<std::uint64_t>(b, t.offset, peek<std::uint64_t>(b, t.offset) + 1);
  expect_error(b, {"offset " + std::to_string(t.offset),
                   "tensor 'tB' offset: ", "is not a multiple of the alignment 32"});

  b = good;
  patch<std::uint64_t>(b, n.offset, std::uint64_t{1} << 62);
  expect_error(b, {"offset " + std::to_string(n.offset), "tensor 'norm' offset",
                   "lies outside the data section"});
  // The last tensor's data end one byte past the file.
  b = good;
  b.pop_back();
  expect_error(b, {"tensor 'norm' offset", "lies outside the data section"});

  b = good;
  patch<std::uint64_t>(b, t.offset, peek<std::uint64_t>(b, q.offset));
  expect_error(b, {"tensor 'tB' offset", "overlaps tensor 'blk.0.attn_q.weight'"});
}

TEST(GgufBadInput, ErrorsThroughOpenNameThePath) {
  auto b = small_writer().bytes();
  const InfoAt q = tensor_info_at(b, "blk.0.attn_q.weight");
  patch<std::uint32_t>(b, q.type, 12);
  const std::string path = temp_path("q4k.gguf");
  write_file(path, b);
  auto r = GgufFile::open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), path + ": offset " + std::to_string(q.type) +
                                      ": tensor 'blk.0.attn_q.weight': unsupported ggml type "
                                      "12 (Q4_K)");
}

TEST(GgufManifest, VerifiesAndCatchesAFlippedByte) {
  const auto b = small_writer().bytes();
  const std::string path = temp_path("m.gguf");
  write_file(path, b);
  auto sum = sha256_file(path);
  ASSERT_TRUE(sum.ok()) << sum.status().message();
  ASSERT_EQ(sum->size(), 64u);
  const std::string manifest = temp_path("m.manifest");
  {
    std::ofstream m(manifest);
    m << "0000000000000000000000000000000000000000000000000000000000000000  other.gguf\n"
      << *sum << "  some/dir/m.gguf\n";
  }
  GgufOpenOptions opts;
  opts.manifest = manifest;
  auto r = GgufFile::open(path, opts);
  ASSERT_TRUE(r.ok()) << r.status().message();

  // Flip one byte of a data tensor: the file still parses, the manifest catches it.
  auto flipped = b;
  flipped.back() ^= 0x01;
  write_file(path, flipped);
  r = GgufFile::open(path, opts);
  ASSERT_FALSE(r.ok());
  const std::string& msg = r.status().message();
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(msg.find(path + ": sha256 mismatch: expected " + *sum), std::string::npos) << msg;
  EXPECT_NE(msg.find("actual " + sha256_file(path).value()), std::string::npos) << msg;
  EXPECT_NE(msg.find(manifest), std::string::npos) << msg;
  opts.manifest = "none";
  EXPECT_TRUE(GgufFile::open(path, opts).ok());

  // "<path>.sha256" is picked up by default.
  {
    std::ofstream m(path + ".sha256");
    m << *sum << "  m.gguf\n";
  }
  r = GgufFile::open(path);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("sha256 mismatch"), std::string::npos);
  write_file(path, b);
  EXPECT_TRUE(GgufFile::open(path).ok());
  std::filesystem::remove(path + ".sha256");

  // A manifest without a line for the file, a malformed one, a missing one.
  {
    std::ofstream m(manifest);
    m << *sum << "  other.gguf\n";
  }
  opts.manifest = manifest;
  r = GgufFile::open(path, opts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "sha256 manifest " + manifest + " has no line for m.gguf");
  {
    std::ofstream m(manifest);
    m << "xyz m.gguf\n";
  }
  r = GgufFile::open(path, opts);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 1: expected"), std::string::npos);
  opts.manifest = manifest + ".absent";
  r = GgufFile::open(path, opts);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
}

// The fuzz seeds (tests/data/gguf/seeds): the hand-written ones parse; every one either
// parses or errors with an offset, never crashes.
TEST(GgufBadInput, FuzzSeedsParseOrError) {
  const std::filesystem::path dir =
      std::filesystem::path(PRIMA_SOURCE_DIR) / "tests/data/gguf/seeds";
  ASSERT_TRUE(std::filesystem::is_directory(dir)) << dir;
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(e.path(), std::ios::binary);
    const std::vector<std::uint8_t> b((std::istreambuf_iterator<char>(in)), {});
    GuardedBytes g(b);
    const std::string name = e.path().filename().string();
    auto r = parse_gguf(g.data(), g.size(), name);
    ++files;
    if (name.rfind("fuzz-", 0) != 0) {
      EXPECT_TRUE(r.ok()) << r.status().message();
    } else if (!r.ok()) {
      EXPECT_EQ(r.status().message().rfind(name + ": offset ", 0), 0u) << r.status().message();
    }
  }
  EXPECT_GE(files, 5);
}

}  // namespace
}  // namespace prima::real
