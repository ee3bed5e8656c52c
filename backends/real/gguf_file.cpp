// GgufFile: opening (sha256 manifest check, read-only mmap, parse), unmapping, and the
// metadata and tensor accessors.
// open() is thread-safe (no shared state); a GgufFile is immutable after open().
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <sstream>

#include "backends/real/gguf_parse.h"

namespace prima::real {

namespace {

std::string base_name(const std::string& p) {
  const auto slash = p.find_last_of('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

bool is_hex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char ch : s)
    if (!std::isxdigit(static_cast<unsigned char>(ch))) return false;
  return true;
}

// Verifies `path` against the sha256sum-format manifest `manifest` (the line whose file
// name has the same base name as `path`).
Status verify_manifest(const std::string& path, const std::string& manifest) {
  std::ifstream in(manifest);
  if (!in) return not_found("cannot read sha256 manifest " + manifest + " for " + path);
  const std::string want_name = base_name(path);
  std::string line, expected;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    // "<hex>  <name>" (text mode) or "<hex> *<name>" (binary mode).
    const auto sp = line.find(' ');
    if (sp == std::string::npos || sp + 2 > line.size() || !is_hex64(line.substr(0, sp)) ||
        (line[sp + 1] != ' ' && line[sp + 1] != '*'))
      return invalid_argument("sha256 manifest " + manifest + " line " + std::to_string(lineno) +
                              ": expected \"<64 hex digits>  <file name>\"");
    if (base_name(line.substr(sp + 2)) == want_name) {
      expected = line.substr(0, sp);
      for (char& ch : expected)
        ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      break;
    }
  }
  if (expected.empty())
    return invalid_argument("sha256 manifest " + manifest + " has no line for " + want_name);
  Result<std::string> actual = sha256_file(path);
  if (!actual.ok()) return actual.status();
  if (*actual != expected)
    return invalid_argument(path + ": sha256 mismatch: expected " + expected + " (from " +
                            manifest + "), actual " + *actual +
                            " (the file is corrupted or is not the file the manifest names)");
  return ok_status();
}

const char* variant_type_name(const GgufValue& v) {
  switch (v.index()) {
    case 0:
      return "a signed integer";
    case 1:
      return "an unsigned integer";
    case 2:
      return "a float";
    case 3:
      return "a bool";
    case 4:
      return "a string";
    default:
      return "an array";
  }
}

}  // namespace

std::int64_t TensorInfo::elements() const {
  if (dims.empty()) return 0;
  std::int64_t n = 1;
  for (std::int64_t d : dims) n *= d;
  return n;
}

Result<std::unique_ptr<GgufFile>> GgufFile::open(const std::string& path,
                                                 const GgufOpenOptions& opts) {
  if (opts.manifest != "none") {
    std::string manifest = opts.manifest;
    if (manifest.empty()) {
      struct stat st {};
      if (::stat((path + ".sha256").c_str(), &st) == 0) manifest = path + ".sha256";
    }
    if (!manifest.empty())
      if (Status s = verify_manifest(path, manifest); !s.ok()) return s;
  }

  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return not_found("cannot open GGUF file " + path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return internal_error("cannot stat " + path + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid_argument(path + ": not a regular file");
  }
  const auto size = static_cast<std::size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return invalid_argument(path + ": offset 0: magic: the file is empty");
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_err = errno;
  ::close(fd);
  if (map == MAP_FAILED)
    return internal_error("cannot mmap " + path + ": " + std::strerror(map_err));

  Result<std::unique_ptr<GgufFile>> r =
      parse_gguf(static_cast<const std::uint8_t*>(map), size, path);
  if (!r.ok()) {
    ::munmap(map, size);
    return r.status();
  }
  (*r)->map_ = map;
  return r;
}

GgufFile::~GgufFile() {
  if (map_) ::munmap(map_, size_);
}

void GgufFile::drop_pages(const void* p, std::size_t n) const {
  if (map_ == nullptr || n == 0) return;
  const auto base = reinterpret_cast<std::uintptr_t>(map_);
  const auto lo = reinterpret_cast<std::uintptr_t>(p);
  if (lo < base || lo + n > base + size_) return;
  const std::uintptr_t page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const std::uintptr_t first = (lo + page - 1) / page * page, last = (lo + n) / page * page;
  if (first < last) ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

const TensorInfo* GgufFile::tensor(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &tensors_[it->second];
}

namespace {
Status missing(const std::string& path, const std::string& key) {
  return not_found(path + ": metadata key '" + key + "' is missing");
}
Status wrong(const std::string& path, const std::string& key, const GgufValue& v,
             const char* expected) {
  return invalid_argument(path + ": metadata key '" + key + "' is " + variant_type_name(v) +
                          ", expected " + expected);
}
}  // namespace

Result<std::string> GgufFile::get_string(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return missing(path_, key);
  if (const auto* s = std::get_if<std::string>(v)) return *s;
  return wrong(path_, key, *v, "a string");
}

Result<std::int64_t> GgufFile::get_int(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return missing(path_, key);
  if (const auto* i = std::get_if<std::int64_t>(v)) return *i;
  if (const auto* u = std::get_if<std::uint64_t>(v)) {
    if (*u > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return invalid_argument(path_ + ": metadata key '" + key + "' = " + std::to_string(*u) +
                              " does not fit in a signed 64-bit integer");
    return static_cast<std::int64_t>(*u);
  }
  return wrong(path_, key, *v, "an integer");
}

Result<double> GgufFile::get_float(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return missing(path_, key);
  if (const auto* d = std::get_if<double>(v)) return *d;
  if (const auto* i = std::get_if<std::int64_t>(v)) return static_cast<double>(*i);
  if (const auto* u = std::get_if<std::uint64_t>(v)) return static_cast<double>(*u);
  return wrong(path_, key, *v, "a number");
}

Result<bool> GgufFile::get_bool(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return missing(path_, key);
  if (const auto* b = std::get_if<bool>(v)) return *b;
  return wrong(path_, key, *v, "a bool");
}

Result<const GgufArray*> GgufFile::get_array(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return missing(path_, key);
  if (const auto* a = std::get_if<GgufArray>(v)) return a;
  return wrong(path_, key, *v, "an array");
}

// The _or accessors return the default when the key is absent or has another type.
std::int64_t GgufFile::get_int_or(const std::string& key, std::int64_t def) const {
  auto r = get_int(key);
  return r.ok() ? *r : def;
}

double GgufFile::get_float_or(const std::string& key, double def) const {
  auto r = get_float(key);
  return r.ok() ? *r : def;
}

bool GgufFile::get_bool_or(const std::string& key, bool def) const {
  auto r = get_bool(key);
  return r.ok() ? *r : def;
}

std::string GgufFile::get_string_or(const std::string& key, const std::string& def) const {
  auto r = get_string(key);
  return r.ok() ? *r : def;
}

}  // namespace prima::real
