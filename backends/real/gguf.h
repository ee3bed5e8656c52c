// GGUF v3 model files: metadata, tensor infos and memory-mapped tensor data.
//
// Layout (little-endian): magic "GGUF", u32 version (2 or 3), u64 tensor_count, u64 kv_count,
// the KV pairs (string key, u32 value type, value; string = u64 length + bytes; array = u32
// element type + u64 count + elements), the tensor infos (name, u32 n_dims, u64 dims
// innermost first, u32 ggml type, u64 offset from the data section), then padding to
// general.alignment (default 32) and the data section.
//
// Integrity: open() checks every length, count, dimension, type and offset against the file
// before anything is used (a truncated or corrupted file is an error naming the byte offset
// and the field, never a crash), that tensors lie inside the file, are aligned and do not
// overlap, and verifies an optional sha256 manifest (seed 004: a corrupted weight shard is
// caught at load). The data stay memory-mapped (read-only) for the file's lifetime.
// Immutable after open(); thread-safe for readers.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "engine/core/status.h"
#include "kernels/cpu/quant.h"

namespace prima::real {

enum class GgufType : std::uint32_t {
  kU8 = 0,
  kI8 = 1,
  kU16 = 2,
  kI16 = 3,
  kU32 = 4,
  kI32 = 5,
  kF32 = 6,
  kBool = 7,
  kString = 8,
  kArray = 9,
  kU64 = 10,
  kI64 = 11,
  kF64 = 12,
};

struct GgufArray {
  GgufType elem = GgufType::kU8;
  std::vector<std::string> strings;  // elem == kString
  std::vector<double> numbers;       // any numeric or bool element type
};

// A metadata value: integers (any width, bool) as int64 / uint64, floats as double.
using GgufValue = std::variant<std::int64_t, std::uint64_t, double, bool, std::string, GgufArray>;

struct TensorInfo {
  std::string name;
  kernels::DType type = kernels::DType::kF32;
  std::vector<std::int64_t> dims;  // innermost first (dims[0] = row length)
  std::uint64_t offset = 0;        // from the start of the data section
  std::uint64_t nbytes = 0;
  const std::uint8_t* data = nullptr;  // into the mapping
  std::int64_t elements() const;
  std::int64_t rows() const { return dims.empty() ? 0 : elements() / dims[0]; }
};

struct GgufOpenOptions {
  // sha256 manifest ("<hex>  <file name>" lines, as sha256sum writes them) to verify the file
  // against. Empty: "<path>.sha256" is verified when it exists; "none" skips the check.
  std::string manifest;
};

class GgufFile {
 public:
  // Errors (kInvalidArgument) name the path, the offset and what is wrong.
  static Result<std::unique_ptr<GgufFile>> open(const std::string& path,
                                                const GgufOpenOptions& opts = {});
  ~GgufFile();

  const std::string& path() const { return path_; }
  std::uint32_t version() const { return version_; }
  std::uint64_t alignment() const { return alignment_; }
  std::size_t file_size() const { return size_; }

  const std::map<std::string, GgufValue>& metadata() const { return kv_; }
  const GgufValue* find(const std::string& key) const;
  // Typed accessors: an error names the key and the expected/actual type.
  Result<std::string> get_string(const std::string& key) const;
  Result<std::int64_t> get_int(const std::string& key) const;  // any integer type
  Result<double> get_float(const std::string& key) const;      // any numeric type
  Result<bool> get_bool(const std::string& key) const;
  Result<const GgufArray*> get_array(const std::string& key) const;
  // Defaults for optional keys.
  std::int64_t get_int_or(const std::string& key, std::int64_t def) const;
  double get_float_or(const std::string& key, double def) const;
  bool get_bool_or(const std::string& key, bool def) const;
  std::string get_string_or(const std::string& key, const std::string& def) const;

  const std::vector<TensorInfo>& tensors() const { return tensors_; }
  const TensorInfo* tensor(const std::string& name) const;  // nullptr if absent
  // Gives back the resident pages that lie wholly inside [p, p + n) of the mapping (the file
  // is mapped read-only and never written: a later read maps them again from the file). For
  // weights that were copied elsewhere (packed); no-op outside the mapping.
  void drop_pages(const void* p, std::size_t n) const;

 private:
  GgufFile() = default;
  std::string path_;
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  std::size_t size_ = 0;
  void* map_ = nullptr;
  std::map<std::string, GgufValue> kv_;
  std::vector<TensorInfo> tensors_;
  std::map<std::string, std::size_t> by_name_;
  friend struct GgufParser;
};

// Writes GGUF v3 files (tests, fuzz seeds, tools). Tensor data are copied.
class GgufWriter {
 public:
  void set(const std::string& key, GgufValue v);
  void set_u32(const std::string& key, std::uint32_t v);  // written with type kU32
  void set_f32(const std::string& key, float v);          // written with type kF32
  void add_tensor(const std::string& name, kernels::DType type, std::vector<std::int64_t> dims,
                  const void* data, std::size_t nbytes);
  // A tensor whose data the caller writes later into the file (see layout()); bytes() and
  // write() write zeros for it.
  void add_tensor_shape(const std::string& name, kernels::DType type,
                        std::vector<std::int64_t> dims);
  Status write(const std::string& path, std::uint64_t alignment = 32) const;
  // The file's bytes (write() writes these).
  std::vector<std::uint8_t> bytes(std::uint64_t alignment = 32) const;

  // Where everything goes, for writing a large file without holding its tensors in memory:
  // the header (padded to the alignment; the tensor data starts right after it), each
  // tensor's offset from the start of the data (in add order) and the data's total size.
  struct Layout {
    std::vector<std::uint8_t> header;
    std::vector<std::uint64_t> offsets;
    std::vector<std::uint64_t> sizes;
    std::uint64_t data_bytes = 0;
  };
  Result<Layout> layout(std::uint64_t alignment = 32) const;

 private:
  struct Entry {
    std::string key;
    GgufValue value;
    GgufType type;  // scalar type to write numbers with
  };
  struct Tensor {
    std::string name;
    kernels::DType type;
    std::vector<std::int64_t> dims;
    std::vector<std::uint8_t> data;
    bool deferred = false;  // add_tensor_shape: no data here
  };
  std::vector<Entry> kv_;
  std::vector<Tensor> tensors_;
};

// sha256 of a file, lowercase hex (OpenSSL's libcrypto).
Result<std::string> sha256_file(const std::string& path);

}  // namespace prima::real
