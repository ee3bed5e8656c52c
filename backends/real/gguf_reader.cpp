// Parses GGUF v2/v3 bytes into a GgufFile: header, metadata, tensor infos, and the layout
// checks (alignment, data section, tensor bounds and overlap). Every length, count and
// offset is checked against the bytes that remain before it is used; an error names the
// buffer (path), the byte offset and the field.
// Stateless; thread-safe (each call parses into its own GgufFile).
#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>

#include "backends/real/gguf_parse.h"

namespace prima::real {

static_assert(std::endian::native == std::endian::little, "GGUF reader assumes little-endian");

namespace {

constexpr std::uint64_t kMaxDims = 4;

// Reads little-endian fields from [data, data + size) with bounds checks.
class Cursor {
 public:
  Cursor(const std::uint8_t* data, std::size_t size, const std::string& label)
      : data_(data), size_(size), label_(label) {}

  std::uint64_t pos() const { return pos_; }
  std::uint64_t remaining() const { return size_ - pos_; }

  Status error(std::uint64_t at, const std::string& field, const std::string& what) const {
    return invalid_argument(label_ + ": offset " + std::to_string(at) + ": " + field + ": " + what);
  }

  // Copies n bytes into out, or an error naming the field if fewer remain.
  Status take(void* out, std::uint64_t n, const std::string& field) {
    if (n > remaining())
      return error(pos_, field,
                   "needs " + std::to_string(n) + " bytes but the file ends after " +
                       std::to_string(remaining()) + " (truncated)");
    std::memcpy(out, data_ + pos_, n);
    pos_ += n;
    return ok_status();
  }

  template <typename T>
  Status read(T& out, const std::string& field) {
    return take(&out, sizeof(T), field);
  }

  Status read_string(std::string& out, const std::string& field) {
    const std::uint64_t at = pos_;
    std::uint64_t len = 0;
    if (Status s = read(len, field + " length"); !s.ok()) return s;
    if (len > remaining())
      return error(at, field,
                   "string length " + std::to_string(len) + " exceeds the " +
                       std::to_string(remaining()) + " bytes left in the file");
    out.assign(reinterpret_cast<const char*>(data_ + pos_), len);
    pos_ += len;
    return ok_status();
  }

 private:
  const std::uint8_t* data_;
  std::uint64_t size_;
  std::uint64_t pos_ = 0;
  const std::string& label_;
};

template <typename T>
GgufValue scalar_value(T v) {
  if constexpr (std::is_same_v<T, bool>) {
    return v;
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<double>(v);
  } else if constexpr (std::is_signed_v<T>) {
    return static_cast<std::int64_t>(v);
  } else {
    return static_cast<std::uint64_t>(v);
  }
}

// Reads one scalar of type t (not string/array).
Status read_scalar(Cursor& c, GgufType t, const std::string& field, GgufValue& out) {
  const std::uint64_t at = c.pos();
  Status s;
  auto get = [&](auto v) {
    s = c.read(v, field);
    if (s.ok()) out = scalar_value(v);
  };
  switch (t) {
    case GgufType::kU8:
      get(std::uint8_t{});
      break;
    case GgufType::kI8:
      get(std::int8_t{});
      break;
    case GgufType::kU16:
      get(std::uint16_t{});
      break;
    case GgufType::kI16:
      get(std::int16_t{});
      break;
    case GgufType::kU32:
      get(std::uint32_t{});
      break;
    case GgufType::kI32:
      get(std::int32_t{});
      break;
    case GgufType::kF32:
      get(float{});
      break;
    case GgufType::kU64:
      get(std::uint64_t{});
      break;
    case GgufType::kI64:
      get(std::int64_t{});
      break;
    case GgufType::kF64:
      get(double{});
      break;
    case GgufType::kBool: {
      std::uint8_t b = 0;
      s = c.read(b, field);
      if (s.ok() && b > 1) return c.error(at, field, "bool byte is " + std::to_string(b));
      if (s.ok()) out = b != 0;
      break;
    }
    default:
      return c.error(at, field, "not a scalar type");
  }
  return s;
}

double as_double(const GgufValue& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* u = std::get_if<std::uint64_t>(&v)) return static_cast<double>(*u);
  if (const auto* d = std::get_if<double>(&v)) return *d;
  if (const auto* b = std::get_if<bool>(&v)) return *b ? 1.0 : 0.0;
  return 0.0;
}

Status read_value(Cursor& c, std::uint32_t raw_type, std::uint64_t type_at,
                  const std::string& field, GgufValue& out) {
  const auto t = static_cast<GgufType>(raw_type);
  if (raw_type > static_cast<std::uint32_t>(GgufType::kF64))
    return c.error(type_at, field,
                   "value type " + std::to_string(raw_type) + " is not a GGUF type (0..12)");
  if (t == GgufType::kString) {
    std::string str;
    if (Status s = c.read_string(str, field); !s.ok()) return s;
    out = std::move(str);
    return ok_status();
  }
  if (t != GgufType::kArray) return read_scalar(c, t, field, out);

  const std::uint64_t elem_at = c.pos();
  std::uint32_t raw_elem = 0;
  if (Status s = c.read(raw_elem, field + " element type"); !s.ok()) return s;
  const auto elem = static_cast<GgufType>(raw_elem);
  if (raw_elem > static_cast<std::uint32_t>(GgufType::kF64))
    return c.error(
        elem_at, field,
        "array element type " + std::to_string(raw_elem) + " is not a GGUF type (0..12)");
  if (elem == GgufType::kArray)
    return c.error(elem_at, field, "arrays of arrays are not supported");
  const std::uint64_t count_at = c.pos();
  std::uint64_t count = 0;
  if (Status s = c.read(count, field + " array count"); !s.ok()) return s;
  // Each element takes at least its scalar size (8 for a string's length).
  const std::uint64_t min_elem = elem == GgufType::kString ? 8 : gguf_scalar_size(elem);
  if (count > c.remaining() / min_elem)
    return c.error(count_at, field,
                   "array of " + std::to_string(count) + " " + gguf_type_name(elem) +
                       " needs at least " + std::to_string(min_elem) + " bytes each but " +
                       std::to_string(c.remaining()) + " bytes are left in the file");
  GgufArray arr;
  arr.elem = elem;
  if (elem == GgufType::kString) {
    arr.strings.resize(count);
    for (std::uint64_t i = 0; i < count; ++i)
      if (Status s = c.read_string(arr.strings[i], field + "[" + std::to_string(i) + "]"); !s.ok())
        return s;
  } else {
    arr.numbers.resize(count);
    GgufValue v;
    for (std::uint64_t i = 0; i < count; ++i) {
      if (Status s = read_scalar(c, elem, field, v); !s.ok()) return s;
      arr.numbers[i] = as_double(v);
    }
  }
  out = std::move(arr);
  return ok_status();
}

// Checked a * b; false on overflow past limit.
bool mul_within(std::uint64_t a, std::uint64_t b, std::uint64_t limit, std::uint64_t& out) {
  if (a != 0 && b > limit / a) return false;
  out = a * b;
  return out <= limit;
}

}  // namespace

struct GgufParser {
  static Result<std::unique_ptr<GgufFile>> parse(const std::uint8_t* data, std::size_t size,
                                                 const std::string& label);
};

Result<std::unique_ptr<GgufFile>> GgufParser::parse(const std::uint8_t* data, std::size_t size,
                                                    const std::string& label) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->path_ = label;
  f->size_ = size;
  Cursor c(data, size, label);

  // Header.
  char magic[4] = {};
  if (Status s = c.take(magic, 4, "magic"); !s.ok()) return s;
  if (std::memcmp(magic, "GGUF", 4) != 0)
    return c.error(0, "magic", "not a GGUF file (the first 4 bytes are not \"GGUF\")");
  if (Status s = c.read(f->version_, "version"); !s.ok()) return s;
  if (f->version_ != 2 && f->version_ != 3)
    return c.error(4, "version",
                   "GGUF version " + std::to_string(f->version_) + " is not supported (2 or 3)");
  std::uint64_t n_tensors = 0, n_kv = 0;
  if (Status s = c.read(n_tensors, "tensor_count"); !s.ok()) return s;
  if (Status s = c.read(n_kv, "kv_count"); !s.ok()) return s;
  // Smallest KV: key length (8) + type (4) + a 1-byte value; smallest tensor info: name
  // length (8) + n_dims (4) + one dim (8) + type (4) + offset (8).
  if (n_kv > c.remaining() / 13)
    return c.error(16, "kv_count",
                   std::to_string(n_kv) + " KV pairs cannot fit in the " +
                       std::to_string(c.remaining()) + " bytes that follow");
  if (n_tensors > c.remaining() / 32)
    return c.error(8, "tensor_count",
                   std::to_string(n_tensors) + " tensor infos cannot fit in the " +
                       std::to_string(c.remaining()) + " bytes that follow");

  // Metadata.
  std::uint64_t alignment_at = 0;
  for (std::uint64_t i = 0; i < n_kv; ++i) {
    const std::uint64_t key_at = c.pos();
    std::string key;
    const std::string kv_field = "kv[" + std::to_string(i) + "]";
    if (Status s = c.read_string(key, kv_field + " key"); !s.ok()) return s;
    if (key.empty()) return c.error(key_at, kv_field + " key", "empty key");
    if (f->kv_.count(key)) return c.error(key_at, kv_field + " key", "duplicate key '" + key + "'");
    const std::string field = "key '" + key + "'";
    const std::uint64_t type_at = c.pos();
    std::uint32_t type = 0;
    if (Status s = c.read(type, field + " value type"); !s.ok()) return s;
    if (key == "general.alignment") alignment_at = c.pos();
    GgufValue v;
    if (Status s = read_value(c, type, type_at, field, v); !s.ok()) return s;
    f->kv_.emplace(std::move(key), std::move(v));
  }
  if (auto it = f->kv_.find("general.alignment"); it != f->kv_.end()) {
    std::uint64_t a = 0;
    if (const auto* u = std::get_if<std::uint64_t>(&it->second)) {
      a = *u;
    } else if (const auto* s = std::get_if<std::int64_t>(&it->second); s && *s > 0) {
      a = static_cast<std::uint64_t>(*s);
    } else {
      return c.error(alignment_at, "key 'general.alignment'", "must be a positive integer");
    }
    if (!std::has_single_bit(a))
      return c.error(alignment_at, "key 'general.alignment'",
                     std::to_string(a) + " is not a power of two");
    f->alignment_ = a;
  }

  // Tensor infos.
  struct Pending {
    std::uint64_t info_at, offset_at;
  };
  std::vector<Pending> where;
  f->tensors_.reserve(n_tensors);
  where.reserve(n_tensors);
  for (std::uint64_t i = 0; i < n_tensors; ++i) {
    TensorInfo t;
    const std::uint64_t info_at = c.pos();
    const std::string idx = "tensor[" + std::to_string(i) + "]";
    if (Status s = c.read_string(t.name, idx + " name"); !s.ok()) return s;
    if (t.name.empty()) return c.error(info_at, idx + " name", "empty tensor name");
    const std::string field = "tensor '" + t.name + "'";
    if (f->by_name_.count(t.name)) return c.error(info_at, field, "duplicate tensor name");
    const std::uint64_t ndims_at = c.pos();
    std::uint32_t n_dims = 0;
    if (Status s = c.read(n_dims, field + " n_dims"); !s.ok()) return s;
    if (n_dims == 0 || n_dims > kMaxDims)
      return c.error(ndims_at, field + " n_dims",
                     std::to_string(n_dims) + " dimensions (1..4 allowed)");
    std::uint64_t elems = 1;
    for (std::uint32_t d = 0; d < n_dims; ++d) {
      const std::uint64_t dim_at = c.pos();
      std::uint64_t dim = 0;
      const std::string dfield = field + " dims[" + std::to_string(d) + "]";
      if (Status s = c.read(dim, dfield); !s.ok()) return s;
      if (dim == 0) return c.error(dim_at, dfield, "dimension is 0");
      if (!mul_within(elems, dim, std::numeric_limits<std::int64_t>::max(), elems))
        return c.error(dim_at, dfield,
                       "element count overflows (dimension " + std::to_string(dim) + ")");
      t.dims.push_back(static_cast<std::int64_t>(dim));
    }
    const std::uint64_t type_at = c.pos();
    std::uint32_t type = 0;
    if (Status s = c.read(type, field + " type"); !s.ok()) return s;
    const kernels::TypeTraits* tr = gguf_tensor_traits(type);
    if (!tr)
      return c.error(
          type_at, field,
          "unsupported ggml type " + std::to_string(type) + " (" + ggml_type_name(type) + ")");
    t.type = static_cast<kernels::DType>(type);
    const auto row = static_cast<std::uint64_t>(t.dims[0]);
    if (row % static_cast<std::uint64_t>(tr->block_elems) != 0)
      return c.error(info_at, field,
                     "row length " + std::to_string(row) + " is not a multiple of the " + tr->name +
                         " block size " + std::to_string(tr->block_elems));
    // Checked: 2^62 F32 elements would wrap a u64 byte count (found by the fuzzer).
    if (!mul_within(elems / static_cast<std::uint64_t>(tr->block_elems), tr->block_bytes,
                    std::numeric_limits<std::uint64_t>::max(), t.nbytes))
      return c.error(
          info_at, field,
          "byte size of " + std::to_string(elems) + " " + tr->name + " elements overflows");
    const std::uint64_t offset_at = c.pos();
    if (Status s = c.read(t.offset, field + " offset"); !s.ok()) return s;
    f->by_name_.emplace(t.name, f->tensors_.size());
    f->tensors_.push_back(std::move(t));
    where.push_back({info_at, offset_at});
  }

  // Data section: starts at the next multiple of the alignment.
  const std::uint64_t infos_end = c.pos();
  const std::uint64_t pad = (f->alignment_ - infos_end % f->alignment_) % f->alignment_;
  if (pad > size - infos_end)
    return c.error(infos_end, "data section",
                   "padding to alignment " + std::to_string(f->alignment_) +
                       " runs past the end of the file (" + std::to_string(size) + " bytes)");
  const std::uint64_t data_start = infos_end + pad;
  const std::uint64_t data_size = size - data_start;

  for (std::size_t i = 0; i < f->tensors_.size(); ++i) {
    TensorInfo& t = f->tensors_[i];
    const std::string field = "tensor '" + t.name + "' offset";
    if (t.offset % f->alignment_ != 0)
      return c.error(where[i].offset_at, field,
                     std::to_string(t.offset) + " is not a multiple of the alignment " +
                         std::to_string(f->alignment_));
    if (t.offset > data_size || t.nbytes > data_size - t.offset)
      return c.error(where[i].offset_at, field,
                     "data [" + std::to_string(t.offset) + ", +" + std::to_string(t.nbytes) +
                         ") lies outside the data section of " + std::to_string(data_size) +
                         " bytes at file offset " + std::to_string(data_start));
    t.data = data + data_start + t.offset;
  }
  std::vector<std::size_t> order(f->tensors_.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return f->tensors_[a].offset < f->tensors_[b].offset;
  });
  for (std::size_t k = 1; k < order.size(); ++k) {
    const TensorInfo& prev = f->tensors_[order[k - 1]];
    const TensorInfo& cur = f->tensors_[order[k]];
    if (cur.offset < prev.offset + prev.nbytes)
      return c.error(where[order[k]].offset_at, "tensor '" + cur.name + "' offset",
                     "data at " + std::to_string(cur.offset) + " overlaps tensor '" + prev.name +
                         "' [" + std::to_string(prev.offset) + ", " +
                         std::to_string(prev.offset + prev.nbytes) + ")");
  }
  return f;
}

Result<std::unique_ptr<GgufFile>> parse_gguf(const std::uint8_t* data, std::size_t size,
                                             const std::string& label) {
  return GgufParser::parse(data, size, label);
}

}  // namespace prima::real
