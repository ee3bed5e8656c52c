// Helpers for the GGUF tests: a byte buffer that ends right before an inaccessible page (so a
// parser that reads past the end crashes the test instead of passing silently), byte-pattern
// search and little-endian patching, a small GGUF model and temp paths.
// Not thread-safe; each test uses its own objects.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "backends/real/gguf.h"

namespace prima::real::testing {

// A copy of `bytes` placed so that its last byte is the last byte before a PROT_NONE page.
class GuardedBytes {
 public:
  explicit GuardedBytes(const std::uint8_t* p, std::size_t n) : n_(n) {
    const std::size_t page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    pages_ = (n + page - 1) / page + 1;
    total_ = pages_ * page;
    void* m = ::mmap(nullptr, total_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::runtime_error("mmap failed");
    base_ = static_cast<std::uint8_t*>(m);
    ::mprotect(base_ + total_ - page, page, PROT_NONE);
    data_ = base_ + total_ - page - n;
    if (n) std::memcpy(data_, p, n);
  }
  explicit GuardedBytes(const std::vector<std::uint8_t>& v) : GuardedBytes(v.data(), v.size()) {}
  ~GuardedBytes() { ::munmap(base_, total_); }
  GuardedBytes(const GuardedBytes&) = delete;
  GuardedBytes& operator=(const GuardedBytes&) = delete;

  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return n_; }

 private:
  std::size_t n_, pages_ = 0, total_ = 0;
  std::uint8_t* base_ = nullptr;
  std::uint8_t* data_ = nullptr;
};

// Offset of the first occurrence of `pattern` in `b`; throws if absent.
inline std::size_t find_bytes(const std::vector<std::uint8_t>& b, const std::string& pattern) {
  auto it = std::search(b.begin(), b.end(), pattern.begin(), pattern.end());
  if (it == b.end()) throw std::runtime_error("pattern not found: " + pattern);
  return static_cast<std::size_t>(it - b.begin());
}

// Offset of a GGUF string (u64 length + bytes) with this content.
inline std::size_t find_gguf_string(const std::vector<std::uint8_t>& b, const std::string& s) {
  std::string pat(8, '\0');
  const std::uint64_t n = s.size();
  std::memcpy(pat.data(), &n, 8);
  return find_bytes(b, pat + s);
}

template <typename T>
void patch(std::vector<std::uint8_t>& b, std::size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof(T));
}
template <typename T>
T peek(const std::vector<std::uint8_t>& b, std::size_t at) {
  T v;
  std::memcpy(&v, b.data() + at, sizeof(T));
  return v;
}

// Field offsets of a tensor info, found by the tensor's name.
struct InfoAt {
  std::size_t name, n_dims, dims, type, offset;
};
inline InfoAt tensor_info_at(const std::vector<std::uint8_t>& b, const std::string& name) {
  InfoAt a{};
  a.name = find_gguf_string(b, name);
  a.n_dims = a.name + 8 + name.size();
  a.dims = a.n_dims + 4;
  a.type = a.dims + 8 * peek<std::uint32_t>(b, a.n_dims);
  a.offset = a.type + 4;
  return a;
}

// Deterministic filler bytes.
inline std::vector<std::uint8_t> filler(std::size_t n, std::uint8_t seed) {
  std::vector<std::uint8_t> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<std::uint8_t>(seed + i * 7);
  return v;
}

// A small model: scalar and array metadata, and three tensors (Q4_0, Q8_0, F32).
inline GgufWriter small_writer() {
  GgufWriter w;
  w.set("general.architecture", std::string("llama"));
  w.set_u32("llama.block_count", 1);
  w.set_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  w.set("t.bool", true);
  GgufArray arr;
  arr.elem = GgufType::kU32;
  arr.numbers = {1, 2, 3};
  w.set("arr.u32", arr);
  GgufArray strs;
  strs.elem = GgufType::kString;
  strs.strings = {"a", "bc"};
  w.set("arr.str", strs);
  const auto q4 = filler(18 * 4, 1), q8 = filler(34 * 4, 2), f = filler(4 * 8, 3);
  w.add_tensor("blk.0.attn_q.weight", kernels::DType::kQ4_0, {64, 2}, q4.data(), q4.size());
  w.add_tensor("tB", kernels::DType::kQ8_0, {64, 2}, q8.data(), q8.size());
  w.add_tensor("norm", kernels::DType::kF32, {8}, f.data(), f.size());
  return w;
}

// A fresh path under the test temp directory.
inline std::string temp_path(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("prima_gguf_test_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return (dir / name).string();
}

inline void write_file(const std::string& path, const std::vector<std::uint8_t>& b) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

}  // namespace prima::real::testing
