// GgufWriter: builds GGUF v3 files (metadata in insertion order, tensors in insertion order,
// each tensor's data aligned, no padding after the last tensor).
//
// Value types written: set() writes int64 as i64, uint64 as u64, double as f64, bool, string,
// and arrays with their GgufArray::elem type (numbers converted to it); set_u32 / set_f32
// write u32 / f32 (use them for keys llama.cpp reads with a fixed type, e.g.
// llama.block_count, llama.attention.layer_norm_rms_epsilon). A later set of the same key
// replaces the earlier value in place. The alignment argument decides the layout and is
// recorded as general.alignment (u32) when it is not the default 32; a general.alignment set
// by the caller is replaced. add_tensor with data == nullptr writes zeros.
// Not thread-safe; bytes() and write() are const.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>

#include "backends/real/gguf_parse.h"

namespace prima::real {

namespace {

// Bytes of a tensor of `type` with `dims`, or an error.
Result<std::uint64_t> tensor_bytes(const std::string& name, kernels::DType type,
                                   const std::vector<std::int64_t>& dims) {
  const auto raw = static_cast<std::uint32_t>(type);
  const kernels::TypeTraits* tr = gguf_tensor_traits(raw);
  if (!tr)
    return invalid_argument("GgufWriter: tensor '" + name + "': unsupported ggml type " +
                            std::to_string(raw) + " (" + ggml_type_name(raw) + ")");
  if (dims.empty() || dims.size() > 4)
    return invalid_argument("GgufWriter: tensor '" + name + "': " + std::to_string(dims.size()) +
                            " dimensions (1..4 allowed)");
  std::uint64_t elems = 1;
  for (std::int64_t d : dims) {
    if (d <= 0)
      return invalid_argument("GgufWriter: tensor '" + name + "': dimension " + std::to_string(d) +
                              " must be positive");
    if (elems > (std::uint64_t{1} << 62) / static_cast<std::uint64_t>(d))
      return invalid_argument("GgufWriter: tensor '" + name + "': too many elements");
    elems *= static_cast<std::uint64_t>(d);
  }
  if (dims[0] % tr->block_elems != 0)
    return invalid_argument("GgufWriter: tensor '" + name + "': row length " +
                            std::to_string(dims[0]) + " is not a multiple of the " + tr->name +
                            " block size " + std::to_string(tr->block_elems));
  return elems / static_cast<std::uint64_t>(tr->block_elems) * tr->block_bytes;
}

class Out {
 public:
  explicit Out(std::vector<std::uint8_t>& b) : b_(b) {}
  template <typename T>
  void put(T v) {
    const auto* p = reinterpret_cast<const std::uint8_t*>(&v);
    b_.insert(b_.end(), p, p + sizeof(T));
  }
  void str(const std::string& s) {
    put<std::uint64_t>(s.size());
    b_.insert(b_.end(), s.begin(), s.end());
  }
  void pad_to(std::uint64_t alignment) {
    while (b_.size() % alignment != 0) b_.push_back(0);
  }
  // A number (one of i, u, d as the flags say) as scalar type t; integers saturate at the
  // target type's range (NaN writes 0), so every conversion is defined.
  void number(GgufType t, double d, std::int64_t i, std::uint64_t u, bool is_int, bool is_uint) {
    auto as_int = [&]<typename I>(I) -> I {
      using L = std::numeric_limits<I>;
      if (is_int) {
        if constexpr (std::is_signed_v<I>)
          return static_cast<I>(std::clamp<std::int64_t>(i, L::min(), L::max()));
        else
          return i < 0 ? 0
                       : static_cast<I>(
                             std::min<std::uint64_t>(static_cast<std::uint64_t>(i), L::max()));
      }
      if (is_uint)
        return static_cast<I>(std::min<std::uint64_t>(u, static_cast<std::uint64_t>(L::max())));
      if (std::isnan(d) || d <= static_cast<double>(L::min()))
        return std::isnan(d) ? I{0} : L::min();
      if (d >= static_cast<double>(L::max())) return L::max();  // 2^63 / 2^64 round up: clamp
      return static_cast<I>(d);
    };
    const double real = is_int ? static_cast<double>(i) : is_uint ? static_cast<double>(u) : d;
    switch (t) {
      case GgufType::kU8:
        put(as_int(std::uint8_t{}));
        break;
      case GgufType::kI8:
        put(as_int(std::int8_t{}));
        break;
      case GgufType::kU16:
        put(as_int(std::uint16_t{}));
        break;
      case GgufType::kI16:
        put(as_int(std::int16_t{}));
        break;
      case GgufType::kU32:
        put(as_int(std::uint32_t{}));
        break;
      case GgufType::kI32:
        put(as_int(std::int32_t{}));
        break;
      case GgufType::kU64:
        put(as_int(std::uint64_t{}));
        break;
      case GgufType::kI64:
        put(as_int(std::int64_t{}));
        break;
      case GgufType::kF32:  // beyond float's range: infinity (the cast alone is undefined)
        put(std::abs(real) > std::numeric_limits<float>::max() && std::isfinite(real)
                ? std::copysign(std::numeric_limits<float>::infinity(),
                                static_cast<float>(real > 0 ? 1 : -1))
                : static_cast<float>(real));
        break;
      case GgufType::kF64:
        put(real);
        break;
      case GgufType::kBool:
        put(static_cast<std::uint8_t>(real != 0.0));
        break;
      default:
        break;
    }
  }

 private:
  std::vector<std::uint8_t>& b_;
};

// The GGUF type a value is written with.
GgufType value_type(const GgufValue& v, GgufType scalar) {
  switch (v.index()) {
    case 3:
      return GgufType::kBool;
    case 4:
      return GgufType::kString;
    case 5:
      return GgufType::kArray;
    default:
      return scalar;
  }
}

Status check_value(const std::string& key, const GgufValue& v) {
  if (key.empty()) return invalid_argument("GgufWriter: empty metadata key");
  const auto* a = std::get_if<GgufArray>(&v);
  if (!a) return ok_status();
  if (a->elem != GgufType::kString && gguf_scalar_size(a->elem) == 0)
    return invalid_argument("GgufWriter: key '" + key + "': array element type " +
                            gguf_type_name(a->elem) + " cannot be written");
  if (a->elem == GgufType::kString ? !a->numbers.empty() : !a->strings.empty())
    return invalid_argument("GgufWriter: key '" + key + "': array of " + gguf_type_name(a->elem) +
                            " holds values of another kind");
  return ok_status();
}

void put_value(Out& o, const GgufValue& v, GgufType scalar) {
  if (const auto* s = std::get_if<std::string>(&v)) return o.str(*s);
  if (const auto* b = std::get_if<bool>(&v)) return o.put<std::uint8_t>(*b ? 1 : 0);
  if (const auto* i = std::get_if<std::int64_t>(&v)) return o.number(scalar, 0, *i, 0, true, false);
  if (const auto* u = std::get_if<std::uint64_t>(&v))
    return o.number(scalar, 0, 0, *u, false, true);
  if (const auto* d = std::get_if<double>(&v)) return o.number(scalar, *d, 0, 0, false, false);
  const auto& a = std::get<GgufArray>(v);
  o.put(static_cast<std::uint32_t>(a.elem));
  if (a.elem == GgufType::kString) {
    o.put<std::uint64_t>(a.strings.size());
    for (const auto& s : a.strings) o.str(s);
  } else {
    o.put<std::uint64_t>(a.numbers.size());
    for (double d : a.numbers) o.number(a.elem, d, 0, 0, false, false);
  }
}

GgufType default_scalar(const GgufValue& v) {
  switch (v.index()) {
    case 0:
      return GgufType::kI64;
    case 1:
      return GgufType::kU64;
    case 2:
      return GgufType::kF64;
    default:
      return value_type(v, GgufType::kU8);
  }
}

// Serialises entries and tensors (the writer's private types, deduced).
// With `layout`, only the header is written to `out` and the offsets and sizes go to `layout`.
template <typename E, typename T>
Status serialize(const std::vector<E>& kv, const std::vector<T>& tensors, std::uint64_t alignment,
                 std::vector<std::uint8_t>& out, GgufWriter::Layout* layout = nullptr) {
  if (alignment == 0 || !std::has_single_bit(alignment))
    return invalid_argument("GgufWriter: alignment " + std::to_string(alignment) +
                            " is not a power of two");
  std::set<std::string> names;
  std::vector<std::uint64_t> offsets;
  std::uint64_t data_end = 0;
  for (const auto& t : tensors) {
    if (t.name.empty()) return invalid_argument("GgufWriter: empty tensor name");
    if (!names.insert(t.name).second)
      return invalid_argument("GgufWriter: duplicate tensor name '" + t.name + "'");
    Result<std::uint64_t> n = tensor_bytes(t.name, t.type, t.dims);
    if (!n.ok()) return n.status();
    if (!t.deferred && *n != t.data.size())
      return invalid_argument("GgufWriter: tensor '" + t.name + "' has " +
                              std::to_string(t.data.size()) +
                              " bytes of data, its type and "
                              "dims need " +
                              std::to_string(*n));
    data_end = (data_end + alignment - 1) / alignment * alignment;
    offsets.push_back(data_end);
    if (layout) layout->sizes.push_back(*n);
    data_end += *n;
  }
  std::size_t n_kv = 0;
  for (const auto& e : kv) {
    if (Status s = check_value(e.key, e.value); !s.ok()) return s;
    if (e.key != "general.alignment") ++n_kv;
  }
  const bool write_alignment = alignment != 32;

  out.clear();
  Out o(out);
  o.put<std::uint32_t>(0x46554747);  // "GGUF"
  o.put<std::uint32_t>(3);
  o.put<std::uint64_t>(tensors.size());
  o.put<std::uint64_t>(n_kv + (write_alignment ? 1 : 0));
  if (write_alignment) {
    o.str("general.alignment");
    const bool fits32 = alignment <= 0xffffffffu;
    o.put(static_cast<std::uint32_t>(fits32 ? GgufType::kU32 : GgufType::kU64));
    if (fits32)
      o.put(static_cast<std::uint32_t>(alignment));
    else
      o.put(alignment);
  }
  for (const auto& e : kv) {
    if (e.key == "general.alignment") continue;
    o.str(e.key);
    o.put(static_cast<std::uint32_t>(value_type(e.value, e.type)));
    put_value(o, e.value, e.type);
  }
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    o.str(t.name);
    o.put<std::uint32_t>(static_cast<std::uint32_t>(t.dims.size()));
    for (std::int64_t d : t.dims) o.put<std::uint64_t>(static_cast<std::uint64_t>(d));
    o.put(static_cast<std::uint32_t>(t.type));
    o.put<std::uint64_t>(offsets[i]);
  }
  o.pad_to(alignment);
  if (layout) {
    layout->offsets = offsets;
    layout->data_bytes = data_end;
    return ok_status();
  }
  const std::size_t data_start = out.size();
  out.resize(data_start + data_end, 0);
  for (std::size_t i = 0; i < tensors.size(); ++i)
    if (!tensors[i].data.empty())
      std::memcpy(out.data() + data_start + offsets[i], tensors[i].data.data(),
                  tensors[i].data.size());
  return ok_status();
}

}  // namespace

void GgufWriter::set(const std::string& key, GgufValue v) {
  const GgufType t = default_scalar(v);
  for (auto& e : kv_)
    if (e.key == key) {
      e.value = std::move(v);
      e.type = t;
      return;
    }
  kv_.push_back({key, std::move(v), t});
}

void GgufWriter::set_u32(const std::string& key, std::uint32_t v) {
  set(key, GgufValue(std::uint64_t{v}));
  for (auto& e : kv_)
    if (e.key == key) e.type = GgufType::kU32;
}

void GgufWriter::set_f32(const std::string& key, float v) {
  set(key, GgufValue(static_cast<double>(v)));
  for (auto& e : kv_)
    if (e.key == key) e.type = GgufType::kF32;
}

void GgufWriter::add_tensor(const std::string& name, kernels::DType type,
                            std::vector<std::int64_t> dims, const void* data, std::size_t nbytes) {
  Tensor t{name, type, std::move(dims), {}, false};
  if (data) {
    const auto* p = static_cast<const std::uint8_t*>(data);
    t.data.assign(p, p + nbytes);
  } else if (Result<std::uint64_t> n = tensor_bytes(name, type, t.dims); n.ok()) {
    t.data.assign(*n, 0);
  }
  tensors_.push_back(std::move(t));
}

void GgufWriter::add_tensor_shape(const std::string& name, kernels::DType type,
                                  std::vector<std::int64_t> dims) {
  tensors_.push_back({name, type, std::move(dims), {}, true});
}

Result<GgufWriter::Layout> GgufWriter::layout(std::uint64_t alignment) const {
  Layout l;
  if (Status s = serialize(kv_, tensors_, alignment, l.header, &l); !s.ok()) return s;
  return l;
}

std::vector<std::uint8_t> GgufWriter::bytes(std::uint64_t alignment) const {
  std::vector<std::uint8_t> out;
  if (!serialize(kv_, tensors_, alignment, out).ok()) out.clear();  // write() says why
  return out;
}

Status GgufWriter::write(const std::string& path, std::uint64_t alignment) const {
  std::vector<std::uint8_t> out;
  if (Status s = serialize(kv_, tensors_, alignment, out); !s.ok())
    return invalid_argument(s.message() + " (writing " + path + ")");
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return unavailable("GgufWriter: cannot create " + path);
  f.write(reinterpret_cast<const char*>(out.data()), static_cast<std::streamsize>(out.size()));
  f.close();
  if (!f) return unavailable("GgufWriter: write to " + path + " failed");
  return ok_status();
}

}  // namespace prima::real
